#!/usr/bin/env python3
"""A program for `lbt sweep --exec` tests of careless and hostile input (tests/e2e/test_exec_hostile.cpp).
It speaks lbt's protocol (README, "Sweeping any program") and misbehaves as MODE asks:

  argv     writes its arguments to RUN_DIR/argv.json (and stdout) and reaches the target
  values   B=16: a NaN loss, B=64: Infinity, B=256: -Infinity (json.dumps writes them bare);
           B=1024: steps 100 then 10 (out of order); others reach the target
  steps    B=16: a negative step; B=64: the target met at step 0; B=256: reaches it only at
           step 5000, past the trial's budget of 3000; others reach the target
  noise    reaches the target; noise.jsonl holds one malformed line among good ones
  delete   B=16: deletes its own run directory; others reach the target
  bytes    B=16: prints bytes that are not UTF-8 and a NUL, then exits 1; others reach the target

usage: protocol_program.py MODE RUN_DIR BATCH [ARGS...]
"""
import json
import os
import shutil
import sys


def reach(run_dir, extra=()):
    with open(os.path.join(run_dir, "eval.jsonl"), "a") as f:
        for step, loss in [(10, 0.5), (20, 0.1), *extra]:
            f.write(json.dumps({"step": step, "val_loss": loss}) + "\n")


def values(run_dir, batch):
    bad = {16: float("nan"), 64: float("inf"), 256: float("-inf")}
    with open(os.path.join(run_dir, "eval.jsonl"), "a") as f:
        if batch in bad:
            f.write(json.dumps({"step": 10, "val_loss": 0.5}) + "\n")
            f.write(json.dumps({"step": 20, "val_loss": bad[batch]}) + "\n")
        elif batch == 1024:
            f.write(json.dumps({"step": 100, "val_loss": 0.5}) + "\n")
            f.write(json.dumps({"step": 10, "val_loss": 0.1}) + "\n")
        else:
            f.write(json.dumps({"step": 10, "val_loss": 0.1}) + "\n")


def steps(run_dir, batch):
    lines = {16: [(-5, 0.5), (10, 0.1)], 64: [(0, 0.1), (10, 0.1)],
             256: [(0, 0.5), (2000, 0.4), (5000, 0.1), (6000, 0.1)]}.get(batch, [(10, 0.1)])
    with open(os.path.join(run_dir, "eval.jsonl"), "a") as f:
        for step, loss in lines:
            f.write(json.dumps({"step": step, "val_loss": loss}) + "\n")


def noise(run_dir, batch):
    reach(run_dir)
    good = {"b_small": batch, "b_big": 2 * batch, "g_small_sq": 1 + 200 / batch,
            "g_big_sq": 1 + 200 / (2 * batch)}
    with open(os.path.join(run_dir, "noise.jsonl"), "a") as f:
        f.write(json.dumps({"step": 10, **good}) + "\n")
        f.write(json.dumps({"step": 15, **good, "g_small_sq": "x"}) + "\n")
        f.write(json.dumps({"step": 20, **good}) + "\n")


def main(argv):
    mode, run_dir, batch = argv[1], argv[2], int(argv[3])
    if mode == "argv":
        with open(os.path.join(run_dir, "argv.json"), "w") as f:
            json.dump(argv[2:], f)
        print(json.dumps(argv[2:]))
        reach(run_dir)
    elif mode == "values":
        values(run_dir, batch)
    elif mode == "steps":
        steps(run_dir, batch)
    elif mode == "noise":
        noise(run_dir, batch)
    elif mode == "bytes":
        if batch == 16:
            sys.stdout.buffer.write(b"bad bytes \xff\xfe\x00 here\n")
            return 1
        reach(run_dir)
    elif mode == "delete":
        if batch == 16:
            shutil.rmtree(run_dir)
        else:
            reach(run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
