#!/bin/sh
# `lbt scaling --workers 1,2` end to end on a tiny model (CTest, label mpi): both runs finish,
# scaling.csv has a row per worker count (synthetic regression: no data files to load), and the 1-worker row has speedup 1 and efficiency 1.
# usage: scaling_smoke.sh LBT CONFIG
set -eu
lbt=$1 config=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$lbt" scaling --config "$config" --workers 1,2 --steps 20 --out "$out" \
  --set data.dataset=synthetic-regression --set data.synthetic.examples=4096 --set data.synthetic.dim=32 \
  --set model.spec=mlp:32-16-1 --set data.validation_size=256 --set train.target=none
cat "$out/scaling.csv"
[ "$(wc -l < "$out/scaling.csv")" -eq 3 ] || { echo "FAIL: want header + 2 rows"; exit 1; }
grep -q '^1,128,20,.*,1.0000,1.0000,' "$out/scaling.csv" || { echo "FAIL: 1-worker row"; exit 1; }
grep -q '^2,128,20,' "$out/scaling.csv" || { echo "FAIL: 2-worker row"; exit 1; }
[ -f "$out/workers-2/summary.json" ] && grep -q '"world_size": 2' "$out/workers-2/summary.json" \
  || { echo "FAIL: the 2-worker run did not run on 2 ranks"; exit 1; }
echo PASS
