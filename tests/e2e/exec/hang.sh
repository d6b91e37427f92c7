#!/bin/sh
# A program that hangs (for `lbt sweep --exec` tests, tests/e2e/test_exec_hostile.cpp) until
# RELEASE exists, with a grandchild `sleep` in its process group; it records both pids in
# RUN_DIR (leader.pid, child.pid). With a third argument it ignores SIGTERM, and so does its
# grandchild (an ignored signal stays ignored across exec): only SIGKILL ends them.
# usage: hang.sh RUN_DIR RELEASE [ignore-term]
run_dir=$1
release=$2
if [ -n "$3" ]; then trap '' TERM; fi
if [ -e "$release" ]; then
  printf '{"step": 10, "val_loss": 0.1}\n' >>"$run_dir/eval.jsonl"
  exit 0
fi
sleep 600 &
echo $! >"$run_dir/child.pid"
echo $$ >"$run_dir/leader.pid"
wait
