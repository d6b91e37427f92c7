#!/usr/bin/env bash
# lbt's Conv2d beside oneDNN's convolution primitives on every distinct convolution of cnn:simple
# and resnet:8 (bench/conv_libraries.cpp): the CPU's own paths, then every library held to AVX2
# (LBT_CPU=avx2, OPENBLAS_CORETYPE=Haswell, ONEDNN_MAX_CPU_ISA=AVX2), ROUNDS interleaved rounds
# each; prints the median over rounds of each impl's ms per training pass of the layer, oneDNN's
# best algorithm (auto, or direct where auto took Winograd) with reorders to/from NCHW ("io") and
# without ("blocked"), and speed ratios oneDNN / lbt (> 1: oneDNN faster). spread: the largest
# (max - min) / median of the three columns' per-round medians, for judging a ratio against noise.
#   usage: bash bench/run_conv_libraries.sh [build dir]   env: ROUNDS (2), BATCHES, THREADS (2),
#          RAW (a file to keep the per-round rows in)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rows=${RAW:-$(mktemp)}  # RAW=FILE keeps the per-round rows
: >"$rows"
source bench/library_rounds.sh
library_rounds "$build/bench/bench_conv_libraries" 32,128,512 "$rows"
/usr/bin/python3 - "$rows" <<'PY'
import collections, statistics, sys
ms = collections.defaultdict(list)  # (isa, model, layer, batch, impl) -> per-round medians
path = {}
order = []
for line in open(sys.argv[1]):
    isa, rnd, model, layer, batch, impl, med, lo, hi, p = line.rstrip("\n").split(",")
    key = (isa, model, layer, int(batch))
    if key not in order:
        order.append(key)
    ms[key + (impl,)].append(float(med))
    path[key + (impl,)] = p
def best(key, suffix):  # oneDNN's faster algorithm for this variant: (median ms, rounds, which)
    cands = [(statistics.median(ms[key + (i,)]), ms[key + (i,)], "direct" if "_direct_" in i else "auto")
             for i in ("onednn_" + suffix, "onednn_direct_" + suffix) if key + (i,) in ms]
    return min(cands)
def spread(v):
    return (max(v) - min(v)) / statistics.median(v)
print("isa | model | layer | batch | lbt path | lbt ms | oneDNN io ms | oneDNN blocked ms | "
      "io speed / lbt | blocked speed / lbt | spread")
for isa in ("native", "avx2"):
    for key in (k for k in order if k[0] == isa):
        lbt = ms[key + ("lbt",)]
        io, blk = best(key, "nchw_io"), best(key, "blocked")
        lm = statistics.median(lbt)
        tag = lambda b: f"{b[0]:.3f}" + (" (direct)" if b[2] == "direct" else "")
        s = max(spread(lbt), spread(io[1]), spread(blk[1]))
        print(f"{isa} | {key[1]} | {key[2]} | {key[3]} | {path[key + ('lbt',)]} | {lm:.3f} | "
              f"{tag(io)} | {tag(blk)} | {lm / io[0]:.2f} | {lm / blk[0]:.2f} | {100 * s:.0f}%")
for isa in ("native", "avx2"):  # which ISA oneDNN's kernels ran on
    kinds = sorted({name for k in path if k[0] == isa and k[4].startswith("onednn")
                    for name in path[k].split(" (")[0].split(" / ")})
    print(f"oneDNN implementations ({isa}): " + "; ".join(kinds))
PY
[[ -n ${RAW:-} ]] || rm -f "$rows"
