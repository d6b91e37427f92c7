#!/bin/sh
# BatchNorm on 2 ranks (CTest, label mpi): rank 0's running statistics are every rank's after each
# step, so the evaluations (split over the ranks) read one model and a run resumed from its
# step-20 checkpoint logs the same eval.jsonl as the uninterrupted run. Before 2026-11-29 each
# rank kept its own statistics: val_accuracy 0.779 uninterrupted, 0.781 resumed.
# usage: batchnorm_resume_np2.sh MPIEXEC LBT
set -eu
mpiexec=$1 lbt=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat > "$out/bn.toml" <<'TOML'
[model]
layers = [{type = "linear", out = 64}, {type = "batchnorm"}, {type = "relu"}, {type = "linear", out = 10}]
[data]
dataset = "fashion-mnist"
path = "/usr/share/datasets/fashion-mnist"
train_limit = 4000
validation_size = 1000
[train]
global_batch = 128
steps = 40
eval_every = 20
checkpoint_every = 20
threads = 1
[optimizer]
name = "sgd"
lr = 0.05
momentum = 0.9
TOML
"$mpiexec" -np 2 "$lbt" train --config "$out/bn.toml" --quiet --out "$out/whole"
cp -a "$out/whole" "$out/resumed"
rm "$out/resumed/checkpoints/step_0000000040.ckpt"
"$mpiexec" -np 2 "$lbt" train --resume "$out/resumed" --quiet
strip() { sed 's/"wall_time":[^,}]*//' "$1"; }
if [ "$(strip "$out/whole/eval.jsonl")" != "$(strip "$out/resumed/eval.jsonl")" ]; then
  echo "FAIL: the resumed run's evaluations differ"; cat "$out/whole/eval.jsonl" "$out/resumed/eval.jsonl"
  exit 1
fi
echo "ok: the resumed run's evaluations equal the uninterrupted run's"
