#!/bin/sh
# lbt sweep started by mpirun is refused in one error line, exit 2, writing nothing: each rank
# ran a sweep of its own (-np 2: one refused the directory as in use by its twin; -np 1: every
# trial after the first failed in MPI_Init, inheriting mpirun's environment; 2026-11-30 audit).
#   usage: sweep_under_mpirun.sh LBT SOURCE_DIR MPIEXEC
lbt=$1 config=$2/experiments/configs/synthetic_sweep.toml mpiexec=$3
[ -n "$mpiexec" ] || { echo "skipped: no MPI"; exit 77; }
d=$(mktemp -d) && trap 'rm -rf "$d"' EXIT
for np in 1 2; do
  "$mpiexec" --oversubscribe -np $np "$lbt" sweep --config "$config" --out "$d/sweep" \
    --set 'sweep.batch_sizes=[16]' >/dev/null 2>"$d/err"
  rc=$?
  [ $rc -ne 0 ] || { echo "-np $np: exit 0"; cat "$d/err"; exit 1; }
  grep -q '^error: lbt sweep was started by mpirun' "$d/err" || { echo "-np $np: message"; cat "$d/err"; exit 1; }
  [ ! -e "$d/sweep" ] || { echo "-np $np: wrote $d/sweep"; exit 1; }
done
