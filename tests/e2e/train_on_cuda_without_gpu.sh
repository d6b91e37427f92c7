#!/bin/sh
# model.device=cuda without a GPU (or without CUDA in the build): one error line and a hint,
# exit 2, no run directory, and where no NVIDIA driver is loaded the line says so; where a GPU is, the run trains (exit 0). A run the GPU cannot do yet
# (here the per-example noise estimator on a CNN) is refused alike on every machine, before any
# GPU is looked for. With MPIEXEC, two ranks alike: several ranks are no longer refused as such,
# so without a GPU every rank ends with the same error (exit 2); with one, both train on it.
#   usage: train_on_cuda_without_gpu.sh LBT SOURCE_DIR [MPIEXEC]
lbt=$1 config=$2/experiments/configs/fmnist_mlp.toml mpiexec=$3
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT
fail() { echo "$1"; cat "$d/err"; exit 1; }

"$lbt" train --config "$config" --quiet --set model.device=cuda --set train.steps=2 --set schedule.warmup=0 \
  --out "$d/run" 2>"$d/err" >/dev/null
rc=$?
# The preset's decay milestones (epochs 8 and 12) fall after 2 steps: a warning line, not the error.
grep -v '^warning: ' "$d/err" >"$d/err.lines"; mv "$d/err.lines" "$d/err"
if [ $rc -ne 0 ]; then
  [ $rc -eq 2 ] || fail "exit $rc"
  head -1 "$d/err" | grep -Eq '^error: (no usable NVIDIA GPU|model.device=cuda: this lbt was built without CUDA)' ||
    fail "unexpected first line"
  [ "$(wc -l <"$d/err")" -eq 2 ] || fail "not one error line and a hint"
  [ ! -e "$d/run" ] || fail "a run directory was written"
  # No driver at all (a CPU machine): said so, not the runtime's "CUDA driver version is
  # insufficient for CUDA runtime version", which reads as an old driver.
  if [ ! -e /proc/driver/nvidia/version ] && grep -q 'no usable NVIDIA GPU' "$d/err"; then
    head -1 "$d/err" | grep -q 'no NVIDIA driver is loaded on this machine$' ||
      fail "no driver: unexpected reason"
  fi
fi

"$lbt" train --config "$config" --quiet --set model.device=cuda --set noise.enabled=true \
  --set noise.estimator=per_example --set model.spec=cnn:simple --out "$d/run2" 2>"$d/err" >/dev/null
rc=$?
[ $rc -eq 2 ] || fail "noise on cuda: exit $rc"
[ ! -e "$d/run2" ] || fail "noise on cuda: a run directory was written"
grep -q '^error: model.device=cuda computes per-example gradient norms for MLPs only' "$d/err" ||
  fail "noise on cuda: unexpected message"

[ -n "$mpiexec" ] || exit 0
"$mpiexec" --oversubscribe -np 2 "$lbt" train --config "$config" --quiet --set model.device=cuda \
  --set train.steps=2 --set schedule.warmup=0 --out "$d/run3" 2>"$d/err" >/dev/null
rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 2 ] || fail "two ranks: exit $rc"
  grep -Eq '^error: (rank [01] of 2: )?(no usable NVIDIA GPU|model.device=cuda: this lbt was built without CUDA)' \
    "$d/err" || fail "two ranks: unexpected message"
  [ ! -e "$d/run3" ] || fail "two ranks: a run directory was written"
fi
