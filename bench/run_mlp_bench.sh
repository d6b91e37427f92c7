#!/usr/bin/env bash
# Side by side: lbt's MLP training step (784-512-512-10, forward + cross-entropy + backward +
# SGD momentum update on a fixed in-memory batch) vs Debian's PyTorch running the same model,
# optimizer and thread count in its default configuration and in its best one on this machine
# (shared/BENCHMARKING.md).
# How: bench/side_by_side.py measures the three INTERLEAVED, in ROUNDS rounds. In each round,
# for each batch size, it runs each implementation once for that batch size alone (timed
# repetitions for `seconds` after a warm-up; its median samples/s), in an order rotated every
# round. Ratios lbt/torch_best and lbt/torch_default are taken within each round, seconds
# apart, and reported as median [min-max] over rounds, beside each implementation's median
# (min-max) samples/s over rounds and lbt's GFLOP/s (6 x batch x parameters per step).
# The machine is a shared VM whose speed swings by up to 2x within a minute: quote the
# per-round ratios, not absolute samples/s.
#   usage: bash bench/run_mlp_bench.sh [build dir] [seconds per call, default 1]
#   env:   BATCHES (32,128,512,2048,8192), THREADS (2), ROUNDS (5), CSV (path for raw rows)
#   LBT_CPU=avx2 runs lbt's AVX2 kernels (and its OpenBLAS's), TORCH_ISA=avx2 holds PyTorch to
#   AVX2 too: an estimate for an AVX2 CPU on an AVX-512 one (bench/reference/torch_env.sh).
# Needs python3-torch and libopenblas0-openmp (apt-get install python3-torch libopenblas0-openmp).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-1}
batches=${BATCHES:-32,128,512,2048,8192}
threads=${THREADS:-2}
rounds=${ROUNDS:-5}
csv_args=()
[[ -n ${CSV:-} ]] && csv_args=(--csv "$CSV")

# lbt: OpenBLAS must detect the CPU itself (the image presets OPENBLAS_CORETYPE=Haswell).
source bench/reference/torch_env.sh
lbt="$lbt_env $(printf %q "$build/bench/bench_mlp_step")"
best="$torch_best bench/reference/torch_mlp.py --label torch_best"
default="$torch_default bench/reference/torch_mlp.py --label torch_default"

/usr/bin/python3 bench/side_by_side.py --impl lbt "$lbt" --impl torch_best "$best" \
  --impl torch_default "$default" --batches "$batches" --threads "$threads" \
  --seconds "$seconds" --rounds "$rounds" "${csv_args[@]}"
