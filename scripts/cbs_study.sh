#!/usr/bin/env bash
# The critical batch along one run and the batch warmup planned from it (docs/cbs.md, "A
# study"): a reference run with checkpoints and the noise scale logged, `lbt cbs` at chosen
# steps, `lbt plan --from` its directory, then steps and examples to the target for the planned
# warmup against fixed batches (the reference's and the warmup's last), 3 seeds each.
#   bash scripts/cbs_study.sh CONFIG OUT [--set KEY=VALUE ...]   (extra sets go to every run)
# Environment (defaults in brackets): BATCH [64] the reference batch, MICRO [16], STEPS [1000],
# AT_STEPS [25,50,100,200,400,800], MULTIPLIERS [1,2,4,8,16,32], SEEDS [0 1 2], LBT
# [build/cli/lbt], BUDGET_STEPS [4000] for the runs to the target, FIXED [the reference's batch
# and the warmup's last] the fixed batches run to the target.
set -euo pipefail
config=$1 out=$2
shift 2
lbt=${LBT:-build/cli/lbt}
batch=${BATCH:-64} micro=${MICRO:-16} steps=${STEPS:-1000}
at_steps=${AT_STEPS:-25,50,100,200,400,800} multipliers=${MULTIPLIERS:-1,2,4,8,16,32}
budget=${BUDGET_STEPS:-4000}
mkdir -p "$out"
start=$SECONDS

if [ ! -f "$out/ref/summary.json" ]; then
  "$lbt" train --config "$config" --out "$out/ref" --quiet "$@" \
    --set train.global_batch="$batch" --set train.micro_batch="$micro" --set train.steps="$steps" \
    --set train.checkpoint_every=25 --set train.checkpoint_keep=100000 \
    --set train.eval_every=100 --set noise.enabled=true --set noise.every=1 \
    --set noise.window_steps=100 --set noise.estimator=both
fi
echo "== reference: $((SECONDS - start)) s"
"$lbt" cbs --from "$out/ref" --at-steps "$at_steps" --multipliers "$multipliers" --jobs 2
echo "== lbt cbs: $((SECONDS - start)) s"
"$lbt" plan --from "$out/ref/cbs" --out "$out/warmup.toml" --overwrite
last=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stages'][-1]['batch'])" \
  "$out/warmup.json")

# To the target: the warmup, the reference's batch and the warmup's last batch, fixed.
for seed in ${SEEDS:-0 1 2}; do
  common=(--quiet --set train.seed="$seed" --set train.stop_at_target=true
          --set train.eval_every=1 --set train.eval_growth=1.5 --set train.checkpoint_every=0)
  [ -f "$out/warmup_s$seed/summary.json" ] ||
    "$lbt" train --config "$out/warmup.toml" --out "$out/warmup_s$seed" "${common[@]}" \
      --set train.steps="$budget" --set noise.enabled=false
  for b in ${FIXED:-$batch $last}; do
    [ -f "$out/fixed${b}_s$seed/summary.json" ] ||
      "$lbt" train --config "$config" --out "$out/fixed${b}_s$seed" "${common[@]}" "$@" \
        --set train.global_batch="$b" --set train.micro_batch="$micro" --set train.steps="$budget"
  done
done
echo "== runs to the target: $((SECONDS - start)) s"
/usr/bin/python3 - "$out" ${FIXED:-$batch $last} <<'PY'
import json, sys, glob, statistics
out, fixed = sys.argv[1], sys.argv[2:]
for arm in ["warmup"] + [f"fixed{b}" for b in fixed]:
    rows = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{arm}_s*/summary.json"))]
    s = [r["steps_to_target"] for r in rows]
    e = [r["examples_to_target"] for r in rows]
    if None in s:
        print(f"{arm}: target not reached in {sum(x is None for x in s)} of {len(s)} seeds")
        continue
    print(f"{arm:>12}: steps {statistics.median(s):7.0f} [{min(s)}, {max(s)}]  "
          f"examples {statistics.median(e):9.0f} [{min(e)}, {max(e)}]  (median [range], {len(s)} seeds)")
PY
