#!/usr/bin/env python3
"""Plots for lbt from the files its commands write (CSV, run directories).

    /usr/bin/python3 notebooks/lbt_plot.py schedule CSV OUT.png [--log-y] [--title T]
        [--x step|epoch --steps-per-epoch '{"lr_B128": 390, ...}']

`schedule` draws lr against step (or epoch: step / the column's steps per epoch), one line per
column after `step` (the CSV that `lbt schedule` prints). `style()` sets the look shared by every lbt plot; other plotting
code imports it (`from lbt_plot import style`).
"""
import argparse
import json
import csv
import sys

import matplotlib
import matplotlib.pyplot as plt


def style():
    """The shared look of lbt plots: readable sizes, light grid, no top/right spines."""
    plt.rcParams.update({
        "figure.figsize": (7.0, 4.2),
        "figure.dpi": 120,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "lines.linewidth": 1.6,
        "legend.frameon": False,
    })


def read_columns(path):
    """CSV with a header -> (header, list of float columns)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise SystemExit(f"error: {path} is empty")
    header, body = rows[0], rows[1:]
    # A column ends where its run ends (an empty field): several batches, several lengths.
    columns = [[float(r[i]) for r in body if i < len(r) and r[i] != ""] for i in range(len(header))]
    return header, columns


def draw_schedule(ax, csv_path, log_y=False, title=None, marks=None, x="step",
                  steps_per_epoch=None):
    """The schedule CSV's columns on `ax`, against step or, with x="epoch", against
    step / steps_per_epoch[column] (each batch's own epoch length)."""
    header, columns = read_columns(csv_path)
    if header[0] != "step" or len(header) < 2:
        raise SystemExit(f"error: {csv_path}: expected a header 'step,lr...', got {header}")
    styles = {"warmup end": ":", "decay start": "--", "drop": "--", "decay end": "-."}
    for name, values in zip(header[1:], columns[1:]):
        label = name[3:].replace("B", "B = ") if name.startswith("lr_") else name
        per = (steps_per_epoch or {}).get(name, 0) if x == "epoch" else 1
        if x == "epoch" and per <= 0:
            raise SystemExit(f"error: no steps per epoch for column {name}: plot against step")
        steps = [s / per for s in columns[0][: len(values)]]
        (line,) = ax.plot(steps, values, label=label)
        # The schedule's boundaries, in the column's colour (from `lbt schedule --plot`).
        for boundary, step in (marks or {}).get(name, []):
            ax.axvline(step / per, color=line.get_color(), linestyle=styles.get(boundary, ":"),
                       linewidth=0.8, alpha=0.8)
    if marks and any(marks.values()):
        ax.text(0.99, 0.99, "dotted: warmup end, dashed: decay start or a step's drop, "
                "dash-dot: decay end",
                transform=ax.transAxes, ha="right", va="top", fontsize="x-small")
    ax.set_xlabel(x)
    ax.set_ylabel("learning rate")
    if log_y:
        ax.set_yscale("log")
    if len(header) > 2:
        ax.legend(title="global batch")
    ax.set_title(title or "LR schedule")


def plot_schedule(csv_path, out_path, log_y=False, title=None, marks=None, x="step",
                  steps_per_epoch=None):
    style()
    fig, ax = plt.subplots()
    draw_schedule(ax, csv_path, log_y, title, marks, x, steps_per_epoch)
    fig.savefig(out_path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("schedule", help="lr vs step from `lbt schedule` CSV")
    p.add_argument("csv")
    p.add_argument("out")
    p.add_argument("--log-y", action="store_true", help="logarithmic lr axis")
    p.add_argument("--title")
    p.add_argument("--marks", help="JSON {column: [[boundary, step], ...]} to draw as lines")
    p.add_argument("--x", choices=["step", "epoch"], default="step", help="the x axis")
    p.add_argument("--steps-per-epoch", help="JSON {column: steps per epoch}, for --x epoch")
    args = parser.parse_args(argv)
    if args.command == "schedule":
        marks = json.loads(args.marks) if args.marks else None
        per_epoch = json.loads(args.steps_per_epoch) if args.steps_per_epoch else None
        plot_schedule(args.csv, args.out, args.log_y, args.title, marks, args.x, per_epoch)
    return 0


if __name__ == "__main__":
    # Only as a script: code that imports style() keeps its own backend (a notebook's inline).
    matplotlib.use("Agg")  # headless: CI and clusters have no display
    sys.exit(main())
