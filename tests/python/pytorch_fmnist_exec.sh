#!/bin/sh
# docs/sweeps.md's PyTorch program under `lbt sweep --exec` (examples/pytorch_fmnist.py, the
# command of its header): one trial at B = 256 on Debian's Fashion-MNIST, run by a real
# /usr/bin/python3 with Debian's torch, read back as reaching the 85% target with a bracket.
# Skipped (77) where torch or the dataset is absent.
#   usage: pytorch_fmnist_exec.sh LBT SOURCE_DIR
lbt=$1 src=$2
/usr/bin/python3 -c 'import torch' 2>/dev/null || exit 77
[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || exit 77
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT
cd "$src" || exit 1
"$lbt" sweep --config experiments/configs/fmnist_mlp_sweep.toml --jobs 1 --out "$d/sweep" \
  -b 256 --set 'sweep.lr_multipliers=[1.0]' --set sweep.seeds=1 --set 'sweep.lr_search="grid"' \
  --no-plots --quiet \
  --exec '/usr/bin/python3 examples/pytorch_fmnist.py {batch_size} {lr} {seed} {run_dir} {max_steps} {eval_every} {optimizer.lr}' \
  >"$d/out" 2>&1 || { cat "$d/out"; echo "FAIL: the sweep exited $?"; exit 1; }
row=$(grep '^256_0,' "$d/sweep/sweep.csv")
echo "$row" | grep -q ',reached_target,' || { echo "FAIL: $row"; exit 1; }
[ -s "$d/sweep/trials/256_0/eval.jsonl" ] || { echo "FAIL: no eval.jsonl"; exit 1; }
echo "ok: $row"
