#!/usr/bin/python3
"""Replays steps-to-target's reading offline, at several evaluation cadences and replay rules.

Training is deterministic, so a run evaluated after every step holds every metric value any
cadence or replay could read. For each such run this script follows the loop's rule
(trainer/loop_evaluation.cpp): evaluations on the reading's 5% grid at the cadence's steps, the
replay start kept at the last evaluation clearly short of the target (by more than the band)
before any came within it, then a walk over the grid from that start to the first step meeting
the target. It counts the runs whose reading differs from the grid's first crossing at any
cadence, and the replay's cost (steps replayed, grid evaluations) summed over the cadences.

Runs to read: `lbt train --config TRIAL/config.toml --out DIR --set train.eval_every=1
--set train.eval_growth=1 --set train.stop_at_target=false --set train.target_resolution=1`
for each trial of a sweep (the config keeps its schedule), then
    /usr/bin/python3 scripts/cadence_replay.py --target 0.14 DIR...
(a target met at or below the value: val_loss; --at-least for accuracy).
"""
import argparse
import json
import math

RESOLUTION = 0.05
CADENCES = {"every 1": (1, 1.0), "growth 1.2": (1, 1.2), "growth 1.5": (1, 1.5),
            "growth 2": (1, 2.0), "every 7": (7, 1.0), "every 60": (60, 1.0)}


def grid_at_or_after(step):
    if step <= 0:
        return 0
    dense_end = 2.0 / RESOLUTION - 1
    if step - 1 < dense_end:
        return step
    s = int(math.floor(dense_end))
    while s < step:
        s += max(1, int(RESOLUTION * (s + 1)))
    return s


def next_eval_after(step, every, growth):
    if growth <= 1:
        return (step // every + 1) * every
    s = 0
    while s <= step:
        s += max(every, math.ceil((growth - 1) * s - 1e-9))
    return s


def neighbour_fluctuation(points):
    """trainer::fluctuation: RMS residual from the line through each point's neighbours."""
    if len(points) < 4:
        return float("nan")
    total = 0.0
    for (t0, v0), (t1, v1), (t2, v2) in zip(points, points[1:], points[2:]):
        a, b = (t2 - t1) / (t2 - t0), (t1 - t0) / (t2 - t0)
        total += (v1 - (a * v0 + b * v2)) ** 2 / (1 + a * a + b * b)
    return math.sqrt(total / (len(points) - 2))


def fixed_band(fraction):
    return lambda history, target: fraction * abs(target)


def noise_band(z, fraction=0.01):
    """The band widened to z x the fluctuation of the evaluations in the last half of the run."""
    def band(history, target):
        last = history[-1][0]
        recent = [p for p in history if p[0] >= last / 2] or history
        if len(recent) < 4:
            recent = history[-4:]
        noise = neighbour_fluctuation(recent)
        return max(fraction * abs(target), z * noise if noise == noise else 0.0)
    return band


def read(metric, short_of, band, target, every, growth, last_step):
    """(reading, replayed steps, walk evaluations), or None where the run never met it."""
    start, near, step, history = 0, False, 0, []
    while True:
        step = grid_at_or_after(next_eval_after(step, every, growth))
        if step > last_step:
            return None
        value = metric[step]
        if short_of(value) <= 0:
            at, evals = grid_at_or_after(start + 1), 0
            while at < step:
                evals += 1
                if short_of(metric[at]) <= 0:
                    return at, at - start, evals
                at = grid_at_or_after(at + 1)
            return step, step - start, evals
        history.append((step, value))
        clearly = short_of(value) > band(history, target)
        if clearly and not near:
            start = step
        near = near or not clearly



def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", type=float, required=True)
    parser.add_argument("--at-least", action="store_true", help="the target is met at or above")
    parser.add_argument("--metric", default="val_loss", help="the EMA's metric in eval.jsonl")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    short_of = (lambda v: args.target - v) if args.at_least else (lambda v: v - args.target)
    rules = {f"band {f:g}": fixed_band(f) for f in (0.01, 0.02, 0.03, 0.05)}
    rules.update({f"band 0.01, widened to {z} x noise": noise_band(z) for z in (2, 3)})
    for name, band in rules.items():
        moved = met = steps = evals = 0
        for run in args.runs:
            metric = {}
            with open(f"{run}/eval.jsonl") as lines:
                for line in lines:
                    record = json.loads(line)
                    metric[record["step"]] = record["ema"][args.metric]
            last = max(metric)
            first = next((s for s in sorted(metric) if s == grid_at_or_after(s)
                          and short_of(metric[s]) <= 0), None)
            if first is None:
                continue
            met += 1
            readings = [read(metric, short_of, band, args.target, e, g, last) for e, g in CADENCES.values()]
            moved += any(r is None or r[0] != first for r in readings)
            steps += sum(r[1] for r in readings if r)
            evals += sum(r[2] for r in readings if r)
        print(f"{name:32s} {moved:3d} of {met} runs read another step at some cadence; "
              f"replayed {steps} steps, {evals} grid evaluations")


if __name__ == "__main__":
    main()
