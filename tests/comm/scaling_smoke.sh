#!/bin/sh
# `lbt scaling --workers 1,2 --repeats 2` end to end on a tiny model (CTest, label mpi): all four
# runs finish, scaling.csv has a row per worker count with the repeat columns (synthetic
# regression: no data files to load), the 1-worker row has speedup 1 and efficiency 1, each
# row has efficiency_min <= efficiency <= efficiency_max, the printed epoch time has a positive
# range around it (3 digits: it read 0.00 at a fixed 2 decimals), and scaling_runs.csv has every run.
# usage: scaling_smoke.sh LBT CONFIG
set -eu
lbt=$1 config=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$lbt" scaling --config "$config" --workers 1,2 --steps 20 --repeats 2 --out "$out" \
  --set data.dataset=synthetic-regression --set data.synthetic.examples=4096 --set data.synthetic.dim=32 \
  --set model.spec=mlp:32-16-1 --set data.validation_size=256 --set train.target=none \
  > "$out/table.txt"
cat "$out/table.txt" "$out/scaling.csv" "$out/scaling_runs.csv"
# workers, global_batch, samples/s and its [min-max], epoch_s and its [lo-hi], ...
awk '$2 == 128 { n++; split(substr($6, 2, length($6) - 2), r, "-");
                 if (!(r[1] > 0 && r[1] <= $5 && $5 <= r[2])) { print "FAIL: epoch_s " $5 " " $6; bad = 1 } }
     END { exit bad || n != 2 }' "$out/table.txt" || { echo "FAIL: want 2 rows, epoch_s in its positive range"; exit 1; }
want=workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,cores,repeats,samples_per_s_min,samples_per_s_max,efficiency_min,efficiency_max
[ "$(head -n 1 "$out/scaling.csv")" = "$want" ] || { echo "FAIL: scaling.csv header"; exit 1; }
[ "$(wc -l < "$out/scaling.csv")" -eq 3 ] || { echo "FAIL: want header + 2 rows"; exit 1; }
grep -q '^1,128,20,.*,1.0000,1.0000,[0-9]*,2,' "$out/scaling.csv" || { echo "FAIL: 1-worker row"; exit 1; }
grep -q '^2,128,20,.*,2,' "$out/scaling.csv" || { echo "FAIL: 2-worker row"; exit 1; }
# Columns by name: efficiency 7, repeats 9, efficiency_min 12, efficiency_max 13.
awk -F, 'NR > 1 && !($9 == 2 && $12 <= $7 && $7 <= $13) { print "FAIL: row " NR ": " $0; bad = 1 }
         END { exit bad }' "$out/scaling.csv" || { echo "FAIL: want efficiency_min <= efficiency <= efficiency_max"; exit 1; }
[ "$(wc -l < "$out/scaling_runs.csv")" -eq 5 ] || { echo "FAIL: scaling_runs.csv wants header + 4 runs"; exit 1; }
# Each run's throughput window: samples_per_s (7) = window_steps (10) x global_batch (4) / window_s (11).
awk -F, 'NR > 1 { want = $10 * $4 / $11; if (!($10 > 0 && $11 > 0 && ($7 - want) ^ 2 < (1e-5 * want) ^ 2)) {
                  print "FAIL: run " NR ": " $0; bad = 1 } } END { exit bad }' "$out/scaling_runs.csv" \
  || { echo "FAIL: want samples_per_s = window_steps x global_batch / window_s"; exit 1; }
for r in 1 2; do
  [ -f "$out/workers-2/repeat-$r/summary.json" ] && grep -q '"world_size": 2' "$out/workers-2/repeat-$r/summary.json" \
    || { echo "FAIL: the 2-worker run of repeat $r did not run on 2 ranks"; exit 1; }
done
# A run the trainer refuses (model.device=cuda on a regression: exit 2 on every machine, GPU or
# not) stops the study at its first run with the trainer's own error and hint, exit 2, not the
# launcher's lines around them.
set +e
"$lbt" scaling --config "$config" --workers 1 --steps 5 --repeats 1 --out "$out/refused" \
  --set data.dataset=synthetic-regression --set data.synthetic.examples=512 \
  --set data.synthetic.dim=8 --set data.validation_size=64 --set model.spec=linear:8-1 \
  --set train.target=none --set model.device=cuda >/dev/null 2>"$out/refused.err"
rc=$?
set -e
err=$(grep -v '^note: ' "$out/refused.err")
[ "$rc" = 2 ] || { echo "FAIL: a refused run: exit $rc, want 2: $err"; exit 1; }
[ "$(printf '%s\n' "$err" | wc -l)" = 2 ] || { echo "FAIL: want error and hint lines only: $err"; exit 1; }
printf '%s\n' "$err" | grep -q '^error: the run repeat 1/1, workers 1 exited with status 2 (its log: .*): ' \
  || { echo "FAIL: the error line: $err"; exit 1; }
# A rerun into the finished study is refused (it replaced scaling.csv and left the old
# workers-2/ beside it, exit 0); with --overwrite the old study goes whole, other files stay,
# folders named like its runs but not a study's among them (it removed any workers-* folder and
# any folder holding only such folders).
echo mine > "$out/notes.txt"
mkdir -p "$out/workers-notes" "$out/backup/workers-1"
echo mine > "$out/workers-notes/README"
# rerun DIR [ARGS]: a one-worker study of a tiny model into DIR, its stderr in $out/rerun.err.
rerun() {
  dir=$1
  shift
  "$lbt" scaling --config "$config" --workers 1 --steps 5 --repeats 1 --out "$dir" \
    --set data.dataset=synthetic-regression --set data.synthetic.examples=512 \
    --set data.synthetic.dim=8 --set data.validation_size=64 --set model.spec=linear:8-1 \
    --set train.target=none "$@" >/dev/null 2>"$out/rerun.err"
}
set +e
rerun "$out"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q 'holds a finished lbt scaling study' "$out/rerun.err" \
  || { echo "FAIL: a rerun without --overwrite: exit $rc: $(cat "$out/rerun.err")"; exit 1; }
[ -d "$out/workers-2" ] || { echo "FAIL: the refused rerun removed workers-2"; exit 1; }
rerun "$out" --overwrite || { echo "FAIL: a rerun with --overwrite: $(cat "$out/rerun.err")"; exit 1; }
[ ! -e "$out/workers-2" ] || { echo "FAIL: --overwrite left the old study's workers-2"; exit 1; }
[ "$(cat "$out/notes.txt")" = mine ] || { echo "FAIL: --overwrite touched notes.txt"; exit 1; }
[ "$(cat "$out/workers-notes/README")" = mine ] && [ -d "$out/backup/workers-1" ] \
  || { echo "FAIL: --overwrite removed folders the study did not write"; exit 1; }
[ "$(wc -l < "$out/scaling.csv")" -eq 2 ] || { echo "FAIL: want header + 1 row"; exit 1; }
# A study stopped before its tables leaves run folders; a rerun with other worker counts measures
# again and removes them (the killed study's workers-2/ stayed beside the new results).
mkdir -p "$out/killed/workers-2/repeat-1"
rerun "$out/killed" || { echo "FAIL: a rerun after a stopped study: $(cat "$out/rerun.err")"; exit 1; }
[ ! -e "$out/killed/workers-2" ] && [ -d "$out/killed/workers-1" ] \
  || { echo "FAIL: the stopped study's workers-2 stayed beside the rerun's results"; exit 1; }
# 16384 ranks of a process each (~12 MiB apiece at least, ~190 GiB) fit no CI machine: refused
# before any run with lbt memory's estimate (it launched mpirun -np 64 of ~410 MiB on 24 GiB).
set +e
"$lbt" scaling --config "$config" --workers 1,16384 --steps 5 --out "$out/huge" \
  --set data.dataset=synthetic-regression --set data.synthetic.examples=20000 \
  --set data.synthetic.dim=8 --set data.validation_size=64 --set model.spec=linear:8-1 \
  --set train.global_batch=16384 --set train.target=none >/dev/null 2>"$out/huge.err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q '16384 ranks need about' "$out/huge.err" && [ ! -e "$out/huge/workers-1" ] \
  || { echo "FAIL: 16384 ranks: exit $rc: $(cat "$out/huge.err")"; exit 1; }
echo PASS
