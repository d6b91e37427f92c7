#!/usr/bin/env bash
# lbt's Linear layers beside OpenBLAS's and oneDNN's GEMMs on the MLP 784-512-512-10
# (bench/gemm_libraries.cpp): the CPU's own paths, then every library held to AVX2 (LBT_CPU=avx2,
# OPENBLAS_CORETYPE=Haswell, ONEDNN_MAX_CPU_ISA=AVX2), ROUNDS interleaved rounds each; prints
# median [min-max] over rounds of each impl's samples/s and its ratio to lbt's.
#   usage: bash bench/run_gemm_libraries.sh [build dir]   env: ROUNDS (2), BATCHES, THREADS (2),
#          RAW (a file to keep the per-round rows in)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rows=${RAW:-$(mktemp)}  # RAW=FILE keeps the per-round rows
: >"$rows"
source bench/library_rounds.sh
library_rounds "$build/bench/bench_gemm_libraries" 32,128,512,2048 "$rows"
/usr/bin/python3 - "$rows" <<'PY'
import collections, statistics, sys
rate = collections.defaultdict(list)
for line in open(sys.argv[1]):
    isa, rnd, impl, batch, med, lo, hi = line.strip().split(",")
    rate[(isa, impl, int(batch))].append(float(med))
print("isa | batch | lbt Linear | OpenBLAS GEMMs | oneDNN GEMMs | OpenBLAS / lbt | oneDNN / lbt")
for isa in ("native", "avx2"):
    for b in sorted({k[2] for k in rate if k[0] == isa}):
        m = {impl: statistics.median(rate[(isa, impl, b)]) for impl in ("lbt_linear", "openblas_gemm", "onednn_gemm")}
        print(f"{isa} | {b} | {m['lbt_linear']:,.0f} | {m['openblas_gemm']:,.0f} | {m['onednn_gemm']:,.0f} | "
              f"{m['openblas_gemm'] / m['lbt_linear']:.2f} | {m['onednn_gemm'] / m['lbt_linear']:.2f}")
PY
[[ -n ${RAW:-} ]] || rm -f "$rows"
