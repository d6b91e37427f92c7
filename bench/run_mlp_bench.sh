#!/usr/bin/env bash
# Side by side, one run: lbt's MLP training step vs Debian's PyTorch in its default
# configuration and in its best one on this machine (shared/BENCHMARKING.md), same model,
# optimizer and thread count. Prints the CSVs and a ratio table.
#   usage: bash bench/run_mlp_bench.sh [build dir] [seconds per batch size]
# Needs python3-torch and libopenblas0-openmp (apt-get install python3-torch libopenblas0-openmp).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-3}
batches=${BATCHES:-32,128,512,2048,8192}
threads=${THREADS:-2}
out=$(mktemp)

# lbt: OpenBLAS must detect the CPU itself (the image presets OPENBLAS_CORETYPE=Haswell).
env -u OPENBLAS_CORETYPE "$build/bench/bench_mlp_step" --batches "$batches" --threads "$threads" \
  --seconds "$seconds" | tee "$out"
# PyTorch, default configuration: the machine's environment as it is.
/usr/bin/python3 bench/reference/torch_mlp.py --batches "$batches" --threads "$threads" \
  --seconds "$seconds" --label torch_default | tee -a "$out"
# PyTorch, best configuration: AVX-512 OpenMP OpenBLAS, malloc that keeps freed memory.
env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824 \
  /usr/bin/python3 bench/reference/torch_mlp.py --batches "$batches" --threads "$threads" \
  --seconds "$seconds" --label torch_best | tee -a "$out"

/usr/bin/python3 - "$out" <<'PY'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if not l.startswith("impl")))
by = {}
for impl, spec, batch, threads, med, lo, hi, gf in rows:
    by.setdefault(int(batch), {})[impl] = (float(med), float(lo), float(hi), float(gf))
print("\nbatch | lbt samples/s (min-max) | GFLOP/s | torch default | torch best | lbt/best | lbt/default")
for b in sorted(by):
    r = by[b]
    l, d, t = r["lbt"], r["torch_default"], r["torch_best"]
    print(f"{b} | {l[0]:,.0f} ({l[1]:,.0f}-{l[2]:,.0f}) | {l[3]:.0f} | {d[0]:,.0f} | {t[0]:,.0f} | "
          f"{l[0]/t[0]:.2f}x | {l[0]/d[0]:.2f}x")
PY
rm -f "$out"
