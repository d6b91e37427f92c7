#!/usr/bin/env bash
# Side by side, one run: lbt's image-model training step vs Debian's PyTorch in its default
# configuration and in its best one on this machine (shared/BENCHMARKING.md), same model,
# optimizer and thread count: the simple CNN on Fashion-MNIST shapes and ResNet-8 on
# 32x32x3. Prints the CSVs and a ratio table with the fraction of FP32 peak.
#   usage: bash bench/run_cnn_bench.sh [build dir] [seconds per batch size]
# Needs python3-torch and libopenblas0-openmp. Check `uptime` first: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seconds=${2:-3}
batches=${BATCHES:-32,128,512}
threads=${THREADS:-2}
peak=${PEAK_GFLOPS:-450}   # FP32 FMA peak of both cores (shared/BENCHMARKING.md)
out=$(mktemp)
best_env=(env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824)

for model in "cnn:simple 1,28,28" "resnet:8 3,32,32"; do
  set -- $model
  env -u OPENBLAS_CORETYPE "$build/bench/bench_cnn_step" --spec "$1" --shape "$2" --batches "$batches" \
    --threads "$threads" --seconds "$seconds" | tee -a "$out"
  /usr/bin/python3 bench/reference/torch_cnn.py --spec "$1" --shape "$2" --batches "$batches" \
    --threads "$threads" --seconds "$seconds" --label torch_default | tee -a "$out"
  "${best_env[@]}" /usr/bin/python3 bench/reference/torch_cnn.py --spec "$1" --shape "$2" \
    --batches "$batches" --threads "$threads" --seconds "$seconds" --label torch_best | tee -a "$out"
done

/usr/bin/python3 - "$out" "$peak" "$threads" <<'PY'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if not l.startswith("impl")))
peak = float(sys.argv[2]) * int(sys.argv[3]) / 2
by = {}
for impl, spec, batch, threads, med, lo, hi, gf in rows:
    by.setdefault((spec, int(batch)), {})[impl] = (float(med), float(lo), float(hi), float(gf))
print(f"\nmodel | batch | lbt samples/s (min-max) | GFLOP/s (% of {peak:.0f}) | torch default | torch best | lbt/best | lbt/default")
for (spec, b) in sorted(by):
    r = by[(spec, b)]
    l, d, t = r["lbt"], r["torch_default"], r["torch_best"]
    print(f"{spec} | {b} | {l[0]:,.0f} ({l[1]:,.0f}-{l[2]:,.0f}) | {l[3]:.0f} ({100*l[3]/peak:.0f}%) | "
          f"{d[0]:,.0f} | {t[0]:,.0f} | {l[0]/t[0]:.2f}x | {l[0]/d[0]:.2f}x")
PY
rm -f "$out"
