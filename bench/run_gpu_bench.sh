#!/usr/bin/env bash
# Side by side on one GPU: lbt's MLP step (bench_gpu_mlp_step) vs PyTorch eager and PyTorch with
# the step in a CUDA graph (bench/reference/torch_gpu_mlp.py), in ROUNDS interleaved rounds;
# ratios lbt / torch are taken within each round and reported as median [min-max].
#   usage: bash bench/run_gpu_bench.sh [build dir] [seconds per batch, default 1]
#   env:   BATCHES (32,128,512,2048,8192), ROUNDS (3), PYTHON (python3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-1}
batches=${BATCHES:-32,128,512,2048,8192}
rounds=${ROUNDS:-3}
python=${PYTHON:-python3}
rows=$(mktemp)
for round in $(seq 1 "$rounds"); do
  "$build/bench/bench_gpu_mlp_step" --batches "$batches" --seconds "$seconds" | sed "1d;s/^/$round,/" >>"$rows"
  "$python" bench/reference/torch_gpu_mlp.py --batches "$batches" --seconds "$seconds" | sed "1d;s/^/$round,/" >>"$rows"
  "$python" bench/reference/torch_gpu_mlp.py --batches "$batches" --seconds "$seconds" --graph | sed "1d;s/^/$round,/" >>"$rows"
done
"$python" - "$rows" <<'PY'
import collections, statistics, sys
rate = {}
for line in open(sys.argv[1]):
    rnd, impl, batch, med, lo, hi = line.strip().split(",")
    rate[(int(rnd), impl, int(batch))] = float(med)
rounds = sorted({k[0] for k in rate}); batches = sorted({k[2] for k in rate})
def span(v): return f"{statistics.median_high(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
print("batch | lbt samples/s | torch eager | torch graph | lbt/eager | lbt/graph")
for b in batches:
    get = lambda impl: [rate[(r, impl, b)] for r in rounds]
    lbt, eager, graph = get("lbt_cuda"), get("torch_eager"), get("torch_graph")
    print(f"{b} | {statistics.median_high(lbt):,.0f} | {statistics.median_high(eager):,.0f} | "
          f"{statistics.median_high(graph):,.0f} | {span([l / e for l, e in zip(lbt, eager)])} | "
          f"{span([l / g for l, g in zip(lbt, graph)])}")
PY
rm -f "$rows"
