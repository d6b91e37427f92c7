#!/usr/bin/env bash
# What a second busy process on the machine costs a tiny model's trial: a linear 16-1 regression
# at batch 8 (STEPS steps, lbt train with its default threads) alone and beside a 2-thread lbt
# training the Fashion-MNIST MLP, INTERLEAVED in ROUNDS rounds; per-step time is the run's
# wall_time_s (summary.json) / steps, the ratio beside / alone taken within each round and
# reported as median [min-max]. On the 2-core AVX-512 EPYC (2026-11-27): while every product
# was split across both threads, a sweep's trial of this model took 10 s beside and 0.3 s alone
# (each join waits out a time slice of the other process; CI's sweep tests, run two at a time,
# timed out on it); with products under core/gemm.hpp's kSplitAboveFlops on one thread but
# oneDNN still starting its own threads for some (the 1024 x 1 x 16 evaluation product), 37x
# [30-53]; with oneDNN's held to one thread too, 1.14x [1.09-1.30], the step 0.0125 -> 0.004 ms
# alone as the tiny batch is gathered without the prefetch thread's wake-ups
# (trainer/data/prefetch.hpp). Run on a machine with 2 cores.
#   usage: bash bench/contention.sh [build dir]
#   env:   STEPS (30000), ROUNDS (3), OUT (scratch directory, default /tmp/lbt_contention)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${STEPS:-30000}
rounds=${ROUNDS:-3}
out=${OUT:-/tmp/lbt_contention}
rm -rf "$out" && mkdir -p "$out"
tiny() {
  env -u OPENBLAS_CORETYPE "$build/cli/lbt" train --quiet --config bench/tiny_linear.toml \
    --set train.steps="$steps" --out "$out/$1" >/dev/null
}
for ((r = 0; r < rounds; r++)); do
  tiny "alone$r"
  env -u OPENBLAS_CORETYPE "$build/cli/lbt" train --quiet \
    --config experiments/configs/fmnist_mlp.toml --set train.threads=2 --set train.steps=1000000 \
    --set train.target= --out "$out/busy$r" >/dev/null 2>&1 &
  busy=$!
  sleep 3  # past its data load, into its steps
  tiny "beside$r"
  kill "$busy" && wait "$busy" 2>/dev/null || true
done
/usr/bin/python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def ms(name):
    s = json.load(open(f"{out}/{name}/summary.json"))
    return 1e3 * s["wall_time_s"] / s["steps"]
alone = [ms(f"alone{r}") for r in range(rounds)]
beside = [ms(f"beside{r}") for r in range(rounds)]
ratios = [b / a for a, b in zip(alone, beside)]
print("ms_per_step_alone,ms_per_step_beside,ratio_median,ratio_min,ratio_max")
print(f"{statistics.median(alone):.4f},{statistics.median(beside):.4f},"
      f"{statistics.median(ratios):.2f},{min(ratios):.2f},{max(ratios):.2f}")
EOF
