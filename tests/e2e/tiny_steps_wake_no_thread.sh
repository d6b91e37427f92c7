#!/bin/sh
# A tiny model's step opens no parallel region with two threads (core/gemm.hpp's
# kSplitAboveFlops, oneDNN held to one thread below it, the micro-batch gathered inline): beside a
# second busy process each such region's join waits out a scheduler time slice, and CI's sweep
# tests, run two at a time, timed out on it (2026-11-27; bench/contention.sh measures the time).
# bench/tiny_linear.toml (linear 16-1 at batch 8, an evaluation every 8 steps), 2000 steps with
# 2 threads, under LD_PRELOAD of omp_fork_count.cpp's library: at most one region per 50 steps
# (0 on the AVX-512 EPYC, 2026-11-28; 4250 with kSplitAboveFlops set to 0). The control, the MLP
# at batch 128 for 20 steps, must open at least one a step (308 there): the count is live.
#   usage: tiny_steps_wake_no_thread.sh LBT FORK_COUNT_SO SOURCE_DIR
lbt=$1 counter=$2 source=$3
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT
count() {  # count NAME ARGS...: lbt train ARGS under the counter; prints the regions opened
  name=$1 && shift
  LD_PRELOAD=$counter LBT_FORK_COUNT_FILE=$d/$name.count "$lbt" train --quiet --out "$d/$name" \
    "$@" >/dev/null 2>"$d/$name.err" || { cat "$d/$name.err" >&2; exit 1; }
  [ -s "$d/$name.count" ] || { echo "no count: $counter was not loaded" >&2; exit 1; }
  cat "$d/$name.count"
}
tiny=$(count tiny --config "$source/bench/tiny_linear.toml" --set train.steps=2000 \
  --set train.threads=2) || exit 1
mlp=$(count mlp --config "$source/experiments/configs/fmnist_mlp.toml" --set train.threads=2 \
  --set train.steps=20 --set train.global_batch=128 --set train.eval_every=1000 \
  --set train.target= --set data.train_limit=4096 --set data.validation_size=1024) || exit 1
echo "regions with 2+ threads: tiny model $tiny in 2000 steps, MLP $mlp in 20 steps"
[ "$mlp" -ge 20 ] || { echo "the control opened fewer than one a step: the counter is not live"; exit 1; }
[ "$tiny" -le 40 ] || { echo "the tiny model woke a second thread $tiny times"; exit 1; }
