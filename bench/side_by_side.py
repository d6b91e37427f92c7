#!/usr/bin/python3
"""Interleaved side-by-side throughput benchmark: speed ratios that survive a noisy machine.

The machines we benchmark on are shared VMs whose speed swings by up to 2x within a minute.
Running one implementation over all batch sizes, then the next, makes a ratio between them
mostly a measure of the neighbours' load. This driver instead measures the implementations
INTERLEAVED, in rounds, and takes every ratio within a round:

  for round r = 1..R:
    for each model (--model, optional) and each batch size:
      for each implementation, in an order rotated by one place per round (so that no
      implementation is always first, and over R = n rounds each one takes each place once):
        run its command for that one batch size for --seconds and record its median samples/s

Each implementation is a label and a command line (--impl LABEL COMMAND; COMMAND is split
with shlex and run without a shell, so environment changes go in it as `env -u VAR A=B prog`).
The driver appends `--batches B --threads T --seconds S` (after the --model arguments, if
any) and reads the CSV lines the command prints, in the format of build/bench/bench_*_step and
bench/reference/torch_*.py:
    impl,spec,batch,threads,median_samples_per_s,min,max,gflops
(a header line starting with `impl` is skipped). The command's own median is over ~0.2-0.3 s
repetitions after a short warm-up; the driver keeps that median per round.

One call per batch size, not one call per round covering all batch sizes: the measurements of
one batch size by the different implementations are then seconds apart rather than a whole
sweep apart. The price is start-up per call: importing torch takes about 1.3-1.9 s here (timed
with `time python3 -c "import torch"`), against at least 1-1.5 s of timed repetitions plus
0.3-0.5 s of warm-up per call. That roughly doubles the wall time of the PyTorch side, which we
accept: start-up is idle, mostly single-threaded time that is not inside any measurement.

Report, per (model, batch): for each implementation the median over rounds of its per-round
medians with their min-max; the first implementation's GFLOP/s (and % of --peak-gflops if
given); and the ratio of the first implementation to each of the others, computed PER ROUND
and summarised as median [min-max] over rounds. Printed as a markdown table. With --csv PATH
the raw per-round rows are written there as well.

  usage: side_by_side.py --impl lbt 'env -u OPENBLAS_CORETYPE build/bench/bench_mlp_step' \
             --impl torch_best '...' --impl torch_default '...' \
             [--model '--spec cnn:simple --shape 1,28,28' ...] --batches 32,128 \
             [--threads 2] [--seconds 1] [--rounds 5] [--peak-gflops 450] [--csv out.csv]
Standard library only; run with /usr/bin/python3.
"""
import argparse
import csv
import shlex
import statistics
import subprocess
import sys
import time

FIELDS = ["impl", "spec", "batch", "threads", "median_samples_per_s", "min", "max", "gflops"]


def run_one(label, argv):
    """Runs one command; returns its single parsed CSV row as a dict."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"side_by_side: {label} failed (exit {proc.returncode}): {shlex.join(argv)}\n"
                 f"{proc.stdout}")
    rows = [line.split(",") for line in proc.stdout.splitlines()
            if line.strip() and not line.startswith("impl")]
    if len(rows) != 1 or len(rows[0]) != len(FIELDS):
        sys.exit(f"side_by_side: {label}: expected one CSV line of {len(FIELDS)} fields from "
                 f"{shlex.join(argv)}, got:\n{proc.stdout}")
    row = dict(zip(FIELDS, rows[0]))
    for key in ("median_samples_per_s", "min", "max", "gflops"):
        row[key] = float(row[key])
    return row


def span(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", nargs=2, action="append", required=True, metavar=("LABEL", "COMMAND"),
                   help="implementation: label and command line; the first one is the subject of "
                        "the ratios")
    p.add_argument("--model", action="append", default=None, metavar="ARGS",
                   help="arguments selecting a model, appended to every command (repeatable)")
    p.add_argument("--batches", default="32,128,512")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per call")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--peak-gflops", type=float, default=None,
                   help="FP32 peak for --threads threads; adds a %% of peak column")
    p.add_argument("--csv", default=None, metavar="PATH", help="write the raw per-round rows here")
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    labels = [label for label, _ in a.impl]
    if len(set(labels)) != len(labels):
        p.error("implementation labels must be distinct")
    commands = {label: shlex.split(cmd) for label, cmd in a.impl}
    models = a.model or [""]
    batches = [int(b) for b in a.batches.split(",")]
    n = len(labels)

    raw = []  # one dict per (round, model, batch, impl)
    start = time.time()
    print(f"# {n} implementations x {len(models)} model(s) x {len(batches)} batch size(s), "
          f"{a.rounds} rounds of {a.seconds:g} s per call, order rotated each round", flush=True)
    for r in range(a.rounds):
        for mi, model in enumerate(models):
            for bi, batch in enumerate(batches):
                shift = (r + mi + bi) % n
                order = labels[shift:] + labels[:shift]
                done = []
                for slot, label in enumerate(order):
                    argv = commands[label] + shlex.split(model) + [
                        "--batches", str(batch), "--threads", str(a.threads),
                        "--seconds", f"{a.seconds:g}"]
                    t0 = time.time()
                    row = run_one(label, argv)
                    row.update(impl=label, round=r + 1, slot=slot + 1, model=mi,
                               start_s=round(t0 - start, 1))
                    raw.append(row)
                    done.append(f"{label} {row['median_samples_per_s']:,.0f}")
                print(f"round {r + 1}/{a.rounds} {row['spec']} batch {batch}: " + ", ".join(done),
                      flush=True)
    print(f"# {time.time() - start:.0f} s in all", flush=True)

    if a.csv:
        cols = ["round", "slot", "start_s"] + FIELDS
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(raw)

    # Summary per (model, batch).
    subject, others = labels[0], labels[1:]
    peak = a.peak_gflops
    gf_head = f"{subject} GFLOP/s" + (f" (% of {peak:g})" if peak else "")
    head = ["model", "batch"] + [f"{label} samples/s" for label in labels[:1]] + [gf_head] + \
        [f"{label} samples/s" for label in others] + \
        [f"{subject}/{label} per round" for label in others]
    print()
    print(f"Median over {a.rounds} interleaved rounds (min-max); ratios taken within each round, "
          f"then median [min-max] over rounds.")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for mi in range(len(models)):
        for batch in batches:
            cell = {(x["round"], x["impl"]): x for x in raw if x["model"] == mi and x["batch"] == str(batch)}
            med = {label: [cell[(r + 1, label)]["median_samples_per_s"] for r in range(a.rounds)]
                   for label in labels}
            gf = statistics.median(cell[(r + 1, subject)]["gflops"] for r in range(a.rounds))
            gf_txt = f"{gf:.0f}" + (f" ({100 * gf / peak:.0f}%)" if peak else "")
            spec = cell[(1, subject)]["spec"]
            line = [spec, str(batch), span(med[subject], lambda v: f"{v:,.0f}"), gf_txt]
            line += [span(med[label], lambda v: f"{v:,.0f}") for label in others]
            for label in others:
                ratios = [s / o for s, o in zip(med[subject], med[label])]
                line.append(f"{statistics.median(ratios):.2f}x "
                            f"[{min(ratios):.2f}-{max(ratios):.2f}]")
            print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    main()
