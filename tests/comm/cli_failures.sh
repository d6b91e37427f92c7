#!/bin/sh
# Whole-job failure through `mpirun -np 2 lbt train` (CTest, label mpi):
#   rank_failure: rank 1 alone misses the data (a relative data.path that exists only in rank
#                 0's working directory) while rank 0 waits in the parameter broadcast; the job must exit non-zero (DataError's code 3) within seconds, with
#                 rank 1's message.
#   bad_batch:    a global batch not divisible by 2 ranks; every rank rejects it (ConfigError, 2),
#                 said once, by rank 0 (every rank printed it, and mpirun's SIGTERM as the job
#                 ended printed "stopping after this step" as for an interrupt).
#   bad_batch_check: the same with --check, which checks on the ranks it was launched with (it
#                 resolved one process and passed before).
# usage: cli_failures.sh CASE MPIEXEC LBT CONFIG
set -u
case_name=$1 mpiexec=$2 lbt=$3 config=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common="train --config $config --quiet --out $out/run --overwrite --set model.spec=mlp:784-32-10
        --set data.train_limit=2048 --set data.validation_size=256 --set train.steps=20 --set train.threads=1"

start=$(date +%s)
case $case_name in
  rank_failure)
    # Every rank has the same config (ranks with different configs stop earlier, at the
    # config check), but the relative data.path exists only in rank 0's working directory.
    ln -s /usr/share/datasets/fashion-mnist "$out/fmnist"
    mkdir "$out/elsewhere"
    timeout 50 "$mpiexec" --oversubscribe -np 2 sh -c \
      'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then cd "$0/elsewhere"; else cd "$0"; fi; exec "$@"' \
      "$out" "$lbt" $common --set data.path=fmnist >"$out/log" 2>&1
    rc=$? want_rc=3 want_msg="error: rank 1 of 2: data file not found: fmnist/" ;;
  bad_batch)
    timeout 50 "$mpiexec" --oversubscribe -np 2 "$lbt" $common --set train.global_batch=127 >"$out/log" 2>&1
    rc=$? want_rc=2 want_msg="train.global_batch must be divisible by the number of ranks (2), got 127" ;;
  bad_batch_check)
    timeout 50 "$mpiexec" --oversubscribe -np 2 "$lbt" $common --set train.global_batch=127 --check \
      >"$out/log" 2>&1
    rc=$? want_rc=2 want_msg="train.global_batch must be divisible by the number of ranks (2), got 127" ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
elapsed=$(( $(date +%s) - start ))
cat "$out/log"
echo "--- exit code $rc (want $want_rc), ${elapsed}s"
[ "$rc" -eq 124 ] && { echo "FAIL: the job hung (killed by timeout)"; exit 1; }
[ "$rc" -eq "$want_rc" ] || { echo "FAIL: exit code $rc, want $want_rc"; exit 1; }
grep -qF "$want_msg" "$out/log" || { echo "FAIL: no '$want_msg' in the output"; exit 1; }
[ "$elapsed" -le 20 ] || { echo "FAIL: took ${elapsed}s to stop"; exit 1; }
if [ "$case_name" != rank_failure ]; then
  [ "$(grep -cF "$want_msg" "$out/log")" -eq 1 ] || { echo "FAIL: the error said more than once"; exit 1; }
  ! grep -q "stopping after this step" "$out/log" || { echo "FAIL: the job's end read as an interrupt"; exit 1; }
fi
[ ! -e "$out/run/metrics.jsonl" ] || [ "$case_name" != bad_batch ] || { echo "FAIL: a rejected run wrote files"; exit 1; }
echo PASS
