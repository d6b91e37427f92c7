#!/bin/sh
# `lbt scaling --workers 1,2 --repeats 2 --compare train.overlap_comm=false,true` end to end on
# a tiny model (CTest, label mpi; synthetic regression, no data files): all eight runs finish
# under OUT/VARIANT/workers-K/repeat-R with the variant's value in their config.toml,
# scaling.csv and scaling_runs.csv keep their columns and add `variant` last, repeat 1 runs
# K-major with the baseline first, scaling_compare.csv has one row per worker count for the
# non-baseline variant with min <= median <= max (timings themselves are not asserted), and the
# plot script draws the CSV. Then bad --compare specs (no '=', an unknown key, one value, a
# repeated value, a value of the wrong type, a value refused at 2 ranks, the key also in --set)
# each exit 2 with one error line and start no run.
# usage: scaling_compare_smoke.sh LBT CONFIG
set -u
lbt=$1 config=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tiny="--set data.dataset=synthetic-regression --set data.synthetic.examples=4096
      --set data.synthetic.dim=32 --set model.spec=mlp:32-16-1 --set data.validation_size=256
      --set train.target=none"
fail() { echo "FAIL: $*"; exit 1; }

"$lbt" scaling --config "$config" --workers 1,2 --steps 20 --repeats 2 --out "$out/study" \
  --compare train.overlap_comm=false,true $tiny || fail "the study exited with $?"
s=$out/study
cat "$s/scaling.csv" "$s/scaling_runs.csv" "$s/scaling_compare.csv"

want=workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,cores,repeats,samples_per_s_min,samples_per_s_max,efficiency_min,efficiency_max,variant
[ "$(head -n 1 "$s/scaling.csv")" = "$want" ] || fail "scaling.csv header"
[ "$(wc -l < "$s/scaling.csv")" -eq 5 ] || fail "scaling.csv wants header + 2 variants x 2 counts"
for v in false true; do
  grep -q "^1,128,20,.*,1.0000,1.0000,[0-9]*,2,.*,overlap_comm=$v\$" "$s/scaling.csv" \
    || fail "no 1-worker row with efficiency 1 for overlap_comm=$v"
  grep -q "^2,128,20,.*,overlap_comm=$v\$" "$s/scaling.csv" || fail "no 2-worker row for $v"
done
awk -F, 'NR > 1 && !($9 == 2 && $12 <= $7 && $7 <= $13) { print "row " NR ": " $0; bad = 1 }
         END { exit bad }' "$s/scaling.csv" || fail "want efficiency_min <= efficiency <= efficiency_max"

want=repeat,position,workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,window_steps,window_s,variant
[ "$(head -n 1 "$s/scaling_runs.csv")" = "$want" ] || fail "scaling_runs.csv header"
[ "$(wc -l < "$s/scaling_runs.csv")" -eq 9 ] || fail "scaling_runs.csv wants header + 8 runs"
# Repeat 1 runs K-major, baseline first: (1,false) (1,true) (2,false) (2,true).
[ "$(awk -F, '$1 == 1 { printf "%s:%s ", $3, $12 }' "$s/scaling_runs.csv")" = \
  "1:overlap_comm=false 1:overlap_comm=true 2:overlap_comm=false 2:overlap_comm=true " ] \
  || fail "repeat 1's run order"

want=workers,variant,baseline,repeats,samples_per_s_ratio,samples_per_s_ratio_min,samples_per_s_ratio_max,efficiency_diff,efficiency_diff_min,efficiency_diff_max
[ "$(head -n 1 "$s/scaling_compare.csv")" = "$want" ] || fail "scaling_compare.csv header"
[ "$(wc -l < "$s/scaling_compare.csv")" -eq 3 ] || fail "scaling_compare.csv wants header + 2 rows"
awk -F, 'NR > 1 && !($2 == "overlap_comm=true" && $3 == "overlap_comm=false" && $4 == 2 &&
                     $6 > 0 && $6 <= $5 && $5 <= $7 && $9 <= $8 && $8 <= $10) { bad = 1 }
         NR == 2 && !($1 == 1 && $8 == 0) { bad = 1 }  # same reference: no efficiency diff at 1
         END { exit bad }' "$s/scaling_compare.csv" || fail "scaling_compare.csv rows"

for v in false true; do
  for k in 1 2; do
    for r in 1 2; do
      run=$s/overlap_comm=$v/workers-$k/repeat-$r
      grep -q "\"world_size\": $k" "$run/summary.json" || fail "$run did not run on $k ranks"
      grep -q "^overlap_comm = $v\$" "$run/config.toml" || fail "$run lacks overlap_comm = $v"
    done
  done
done
[ -s "$s/scaling_speedup.png" ] || fail "no plot: $(cat "$s/plot.log")"

# Bad specs: exit 2, one error line, and no run started (the study directory never made).
bad() {  # want_msg: a grep basic regular expression
  want_msg=$1
  shift
  "$lbt" scaling --config "$config" --workers 1,2 --steps 20 --repeats 1 --out "$out/bad" \
    $tiny "$@" > "$out/bad.log" 2>&1
  rc=$?
  cat "$out/bad.log"
  [ "$rc" -eq 2 ] || fail "'$*' exited with $rc, want 2"
  [ "$(grep -c '^error: ' "$out/bad.log")" -eq 1 ] || fail "'$*': want one error line"
  grep -q -e "$want_msg" "$out/bad.log" || fail "'$*': no '$want_msg' in the output"
  [ ! -e "$out/bad" ] || fail "'$*' started the study"
}
bad "has no '='" --compare train.overlap_comm
bad "--compare train.overlap_comms=false: unknown config key 'train.overlap_comms'" --compare train.overlap_comms=false,true
bad "has one value" --compare train.overlap_comm=true
bad "lists true twice" --compare train.overlap_comm=false,true,true
bad "--compare train.overlap_comm=maybe: " --compare train.overlap_comm=false,maybe
bad "--compare train.global_batch=127 at 2 worker(s): " --compare train.global_batch=128,127
bad "set the same key" --compare train.overlap_comm=false,true --set train.overlap_comm=true
echo PASS
