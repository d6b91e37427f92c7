#!/bin/sh
# A full disk under a run and under a sweep's trials (a tmpfs this small: needs root and mount,
# else skipped, exit 77). lbt train's error is the write that failed (a .jsonl append), not the
# failed summary.json it then could not write either, which hid it; a sweep's trial that died of
# it says so (its train.log was empty: "exited with code 1" was all it said; 2026-11-29 audit).
#   usage: disk_full.sh LBT SOURCE_DIR
lbt=$1 source=$2
d=$(mktemp -d) && mkdir "$d/m" || exit 1
cleanup() { umount "$d/m" 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
mount -t tmpfs -o size=84k tmpfs "$d/m" 2>/dev/null || { echo "skipped: cannot mount a tmpfs"; exit 77; }
fail() { echo "FAIL: $*"; cat "$d/err" 2>/dev/null; exit 1; }

"$lbt" train -c "$source/experiments/configs/synthetic_regression.toml" --set model.spec=linear:32-1 \
  --set train.steps=200 --set train.log_every=1 --set train.eval_every=20 \
  --set train.checkpoint_every=50 -q -o "$d/m/run" >/dev/null 2>"$d/err"
rc=$?
[ $rc -eq 1 ] || fail "lbt train on a full disk exited $rc, not 1"
# metrics.jsonl, noise.jsonl or eval.jsonl: whichever line the disk fills on
grep -Eq "^error: cannot append to $d/m/run/[a-z]+\.jsonl: No space left on device" "$d/err" ||
  fail "the error does not name the append that failed"
grep -q "\.tmp\.[0-9]" "$d/err" && fail "the error names a temporary file"

umount "$d/m" && mkdir -p "$d/sweep" && mount -t tmpfs -o size=100k tmpfs "$d/m" || exit 1
ln -s "$d/m" "$d/sweep/trials" 2>/dev/null
"$lbt" sweep -c "$source/experiments/configs/synthetic_sweep.toml" -o "$d/sweep" -b 16,64,256 \
  --set sweep.lr_search=grid --set sweep.max_steps=300 --no-plots -q >/dev/null 2>"$d/err"
rc=$?
[ $rc -ne 0 ] || fail "the sweep on a full disk exited 0"
# Each trial that failed names the disk (its own error line, or the sweep's reading of it).
grep -A20 "trials failed" "$d/err" | grep "^  " | grep -v -e "No space left" -e "disk holding it is full" &&
  fail "a failed trial does not say the disk was full"
grep -q -e "No space left" -e "disk holding it is full" "$d/err" || fail "nothing names the full disk"
echo "ok: full disks named by lbt train and by the sweep's failed trials"
