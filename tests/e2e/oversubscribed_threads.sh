#!/bin/sh
# Ranks on one machine x train.threads past its cores: rank 0 warns once (4 ranks x 2 threads on
# 2 cores ran 8-13x slower than 1 thread each, without a word; 2026-11-30 audit). Within the
# cores, nothing is said.
#   usage: oversubscribed_threads.sh LBT SOURCE_DIR MPIEXEC
lbt=$1 config=$2/experiments/configs/synthetic_regression.toml mpiexec=$3
[ -n "$mpiexec" ] || { echo "skipped: no MPI"; exit 77; }
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT
cores=$(getconf _NPROCESSORS_ONLN)
run() {  # THREADS OUT
  "$mpiexec" --oversubscribe -np 2 "$lbt" train --config "$config" --quiet --set train.steps=5 \
    --set train.threads=$1 --out "$d/$2" >/dev/null 2>"$d/$2.err" || { cat "$d/$2.err"; exit 1; }
}
run "$cores" over
[ "$(grep -c "^warning: 2 rank(s) on this machine x train.threads = $cores is" "$d/over.err")" -eq 1 ] ||
  { echo "over: expected one warning"; cat "$d/over.err"; exit 1; }
[ "$cores" -ge 2 ] || exit 0
run 1 within
! grep -q "rank(s) on this machine" "$d/within.err" || { echo "within: warned"; cat "$d/within.err"; exit 1; }
