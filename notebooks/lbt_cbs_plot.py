"""The local critical batch along a run beside its noise scale, from `lbt cbs`'s cbs.json.

  cbs.png   CBS(step) (Merrill et al. 2025: branches at k x B from the run's checkpoints; the
            bar is the range over data-order seeds; a triangle down is a bound "below the
            smallest k > 1", a triangle up "at least the largest k", each with the seeds' range
            beside it; an open triangle ends a range open above) and B_simple(step) from the
            run's noise.jsonl with its ci95 (McCandlish et al. 2018; an open triangle: not
            resolved there, the ci95's lower end), both in examples, log y.

usage: /usr/bin/python3 notebooks/lbt_cbs_plot.py CBS_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lbt_runs import COLORS, plt  # noqa: E402


def plot_cbs(points: list[dict], ax) -> None:
    resolved = [p for p in points if p["cbs"] is not None]
    if resolved:
        steps = [p["step"] for p in resolved]
        cbs = [p["cbs"] for p in resolved]
        ends = [p["cbs_interval"] or [c, c] for c, p in zip(cbs, resolved)]
        lo = [c - e[0] for c, e in zip(cbs, ends)]
        # An open upper end (a seed's largest k inside): the bar stops at the largest batch tried.
        top = max(int(k) for k in points[0]["val_loss"])
        hi = [(e[1] if e[1] is not None else top * p["batch"]) - c
              for c, e, p in zip(cbs, ends, resolved)]
        ax.errorbar(steps, cbs, yerr=[lo, hi], fmt="o-", color=COLORS["data"], capsize=3,
                    label="CBS (branches; bar: seeds' range and the grid's step)")
    for kind, marker, text in [("below", "v", "CBS below"), ("at_least", "^", "CBS at least")]:
        bounded = [p for p in points if p["bound"] and p["bound"]["kind"] == kind]
        if bounded:
            ax.scatter([p["step"] for p in bounded], [p["bound"]["batch"] for p in bounded],
                       marker=marker, color=COLORS["data"], s=50, label=text)
        # A bound is the median seed's: the seeds' interval is drawn beside it, as for a value.
        ranged = [p for p in bounded if p["cbs_interval"]]
        if ranged:
            top = max(int(k) for k in points[0]["val_loss"])
            ax.vlines([p["step"] for p in ranged], [p["cbs_interval"][0] for p in ranged],
                      [p["cbs_interval"][1] or top * p["batch"] for p in ranged],
                      color=COLORS["data"], lw=1)
    # An interval open above (a seed's largest k was inside): its bar ends at the largest batch
    # tried, marked with an open triangle, not a cap that reads as a closed end.
    open_above = [p for p in points if p["cbs_interval"] and p["cbs_interval"][1] is None]
    if open_above:
        top = max(int(k) for k in points[0]["val_loss"])
        # Larger than the filled "at least" triangle it can sit on, so it rings it, not hides.
        ax.scatter([p["step"] for p in open_above], [top * p["batch"] for p in open_above],
                   marker="^", facecolors="none", edgecolors=COLORS["data"], s=140,
                   linewidths=1.2, label="interval open above (a seed inside at the largest k)")


def plot_b_simple(points: list[dict], ax) -> None:
    # Not resolved at that step: the record's lower ci95 end, a bound (B_simple is large there).
    bounded = [p for p in points if p["b_simple"] is None and p["b_simple_ci95"][0]]
    if bounded:
        ax.scatter([p["b_simple_step"] for p in bounded],
                   [p["b_simple_ci95"][0] for p in bounded], marker="^", facecolors="none",
                   edgecolors=COLORS["fit"], s=50, label="B_simple unresolved: ci95 lower end")
    noisy = [p for p in points if p["b_simple"] is not None]
    if not noisy:
        return
    steps = [p["b_simple_step"] for p in noisy]
    b = [p["b_simple"] for p in noisy]
    ci = [p["b_simple_ci95"] for p in noisy]
    lo = [v - (c[0] if c[0] is not None else v) for v, c in zip(b, ci)]
    hi = [(c[1] if c[1] is not None else v) - v for v, c in zip(b, ci)]
    ax.errorbar(steps, b, yerr=[lo, hi], fmt="s--", color=COLORS["fit"], capsize=3,
                label="B_simple (noise.jsonl; bar: ci95)")


def main(cbs_dir: Path) -> None:
    data = json.loads((cbs_dir / "cbs.json").read_text())
    points = data["points"]
    fig, ax = plt.subplots()
    plot_cbs(points, ax)
    plot_b_simple(points, ax)
    if points:  # the reference's own batch: CBS below it means the run was past critical there
        ax.axhline(points[0]["batch"], color=COLORS["perfect"], lw=0.8, ls=":",
                   label="reference batch B")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step of the reference run")
    ax.set_ylabel("batch (examples)")
    batch = points[0]["batch"] if points else None
    ax.set_title(f"local critical batch vs noise scale (reference B = {batch})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(cbs_dir / "cbs.png")


if __name__ == "__main__":
    plt.switch_backend("Agg")  # headless: CI and clusters have no display
    main(Path(sys.argv[1]))
