#!/usr/bin/env bash
# What the default periodic checkpoint (train.checkpoint_every_seconds = 300) costs a run: the
# default MLP preset (784-512-512-10, momentum, Fashion-MNIST) for STEPS steps with periodic
# checkpoints off (0), at the default (300) and every half second (0.5, to measure one checkpoint's
# cost and scale it to the default's interval). The three run INTERLEAVED, in ROUNDS rounds
# with the order rotated each round; per-step time is the run's wall_time_s (the training loop,
# summary.json) / steps; ratios to "off" are taken within each round and reported as median
# [min-max] over rounds. A shared machine drifts between minutes: quote the ratios.
#   usage: bash bench/checkpoint_cost.sh [build dir]
#   env:   STEPS (1500), ROUNDS (5), OUT (scratch directory, default /tmp/lbt_ckpt_cost)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${STEPS:-1500}
rounds=${ROUNDS:-5}
out=${OUT:-/tmp/lbt_ckpt_cost}
rm -rf "$out" && mkdir -p "$out"
variants=(0 300 0.5)
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#variants[@]}; k++)); do
    every=${variants[$(((k + r) % ${#variants[@]}))]}
    env -u OPENBLAS_CORETYPE "$build/cli/lbt" train --quiet \
      --config experiments/configs/fmnist_mlp.toml --set train.steps="$steps" \
      --set train.eval_every=100000 --set train.checkpoint_every_seconds="$every" \
      --set train.checkpoint_final=false --set train.checkpoint_keep=100000 --out "$out/every$every-round$r" >/dev/null
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys, glob, os
out, rounds = sys.argv[1], int(sys.argv[2])
def step_s(every, r):
    d = f"{out}/every{every}-round{r}"
    s = json.load(open(f"{d}/summary.json"))
    return s["wall_time_s"] / s["steps"], len(glob.glob(f"{d}/checkpoints/*.ckpt"))
print("variant,median_ms_per_step,ratio_to_off_median,ratio_min,ratio_max,checkpoints_per_run")
for every in ("0", "300", "0.5"):
    ratios, times, ckpts = [], [], []
    for r in range(rounds):
        t, n = step_s(every, r)
        times.append(t * 1e3); ckpts.append(n)
        ratios.append(t / step_s("0", r)[0])
    print(f"every_{every}s,{statistics.median(times):.3f},{statistics.median(ratios):.4f},"
          f"{min(ratios):.4f},{max(ratios):.4f},{statistics.median(ckpts):g}")
# One checkpoint's cost from the every-half-second runs, scaled to one per 300 s.
extra = []
for r in range(rounds):
    (t1, n1), (t0, _) = step_s("0.5", r), step_s("0", r)
    s = json.load(open(f"{out}/every0.5-round{r}/summary.json"))
    if n1 > 0: extra.append((t1 - t0) * s["steps"] / n1)
if extra:
    # A range over rounds that holds 0 is the machine's noise, not a cost (it printed -13.7 ms).
    c, lo, hi = statistics.median(extra), min(extra), max(extra)
    if lo <= 0.0 <= hi:
        print(f"one checkpoint: not resolved above the machine's noise (per round {lo * 1e3:.1f} "
              f"to {hi * 1e3:.1f} ms); time one by --set train.checkpoint_every=1 instead")
    else:
        print(f"one checkpoint: {c * 1e3:.1f} ms [{lo * 1e3:.1f}, {hi * 1e3:.1f}] (median "
              f"[range] over rounds); at one per 300 s: {100 * c / 300:.4f}% of a run's time")
EOF
