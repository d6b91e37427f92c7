#!/usr/bin/env python3
"""A training program for `lbt sweep --exec` tests that speaks lbt's protocol without training:
its validation loss falls as target * S / step, so it first meets val_loss <= target at step
S = S_min (1 + B_crit / B) x (1 + 0.7 ln(lr / lr*(B))^2) x seed noise, with lr*(B) = 0.01 B^0.75
the best LR; above 8 lr* it diverges (a NaN loss). It appends {"step", "val_loss"} lines to
RUN_DIR/eval.jsonl every EVAL_EVERY steps, plus raw two-batch gradient norms to noise.jsonl
(B_simple = 200 exactly in expectation), and exits 3 when asked to fail (FAIL_BATCH = B). With
CATCH_SIGINT=1 it takes 0.05 s an evaluation and, on SIGINT, stops and exits 0, as training
scripts that catch Ctrl-C do.

usage: steps_model.py BATCH LR SEED RUN_DIR MAX_STEPS EVAL_EVERY
"""
import json
import math
import os
import signal
import sys
import time

import numpy as np

S_MIN, B_CRIT, TARGET = 40.0, 600.0, 0.14


def main(argv):
    batch, lr, seed, run_dir, max_steps, eval_every = (
        int(argv[1]), float(argv[2]), int(argv[3]), argv[4], int(argv[5]), int(argv[6]))
    if os.environ.get("FAIL_BATCH") == str(batch):
        print("steps_model: asked to fail at this batch size", file=sys.stderr)
        return 3
    caught = []
    if os.environ.get("CATCH_SIGINT") == "1":
        signal.signal(signal.SIGINT, lambda *_: caught.append(True))
    rng = np.random.default_rng(seed * 7919 + batch)
    lr_star = 0.01 * batch ** 0.75
    steps = S_MIN * (1 + B_CRIT / batch) * (1 + 0.7 * math.log(lr / lr_star) ** 2)
    steps *= math.exp(0.1 * rng.standard_normal())
    with open(os.path.join(run_dir, "eval.jsonl"), "a") as ev, \
            open(os.path.join(run_dir, "noise.jsonl"), "a") as nz:
        for step in range(eval_every, max_steps + 1, eval_every):
            loss = float("nan") if lr > 8 * lr_star and step > 3 else TARGET * steps / step
            ev.write(json.dumps({"step": step, "val_loss": loss}) + "\n")
            # E|g_b|^2 = |G|^2 + tr(Sigma)/b with |G|^2 = 1, tr(Sigma) = 200.
            b, B = batch, 2 * batch
            nz.write(json.dumps({"step": step, "b_small": b, "b_big": B,
                                 "g_small_sq": 1 + 200 / b, "g_big_sq": 1 + 200 / B}) + "\n")
            if loss != loss or loss <= TARGET:
                break
            if os.environ.get("CATCH_SIGINT") == "1":
                ev.flush()
                time.sleep(0.05)
                if caught:
                    print("steps_model: stopped by SIGINT at step", step, file=sys.stderr)
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
