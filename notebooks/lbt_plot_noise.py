#!/usr/bin/python3
"""Plot B_simple over training from a run directory's noise.jsonl: "now" (the window's trend at
each step, with its 95% interval) and "averaged" (the EMA, dashed), per estimator.

Usage: /usr/bin/python3 notebooks/lbt_plot_noise.py RUN_DIR [OUT.png]
Reads only noise.jsonl (keeping the last line per step and estimator, as runs may be restarted)
and writes RUN_DIR/noise.png. McCandlish et al. 2018, arXiv:1812.06162.

For sweeps (notebooks/lbt_sweep_plots.py calls these): mark_noise_scales() marks the measured
B_simple (a band from fit.json's intervals.B_simple) and B_noise beside the fitted B_crit, and
noise_over_training() draws each best trial's B_simple over training, one line per batch size.
Both draw nothing where noise was not measured.
"""
import json
import math
import re
import sys
from pathlib import Path

# The backend is chosen in main(): lbt_sweep_plots imports this module into sweep.ipynb, whose
# inline backend an import-time matplotlib.use("Agg") replaced (no figures shown).
import matplotlib
import matplotlib.pyplot as plt


def load(run_dir):
    rows = {}
    path = Path(run_dir) / "noise.jsonl"
    if not path.is_file():  # none, or not a regular file (a FIFO would block the reader)
        return {}
    for line in path.read_text(errors="replace").splitlines():
        try:
            j = json.loads(line)
        except ValueError:  # a torn last line of a killed run
            continue
        if not isinstance(j, dict) or "estimator" not in j:
            continue
        step = j.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            rows[(str(j["estimator"]), step)] = j  # last line per (estimator, step) wins
    by_name = {}
    for (name, step), j in sorted(rows.items(), key=lambda kv: kv[0][1]):
        by_name.setdefault(name, []).append(j)
    return by_name


def finite(v):
    return v is not None and math.isfinite(v)


def draw_b_noise(ax, hess):
    """B_noise probes with their 95% intervals (an unbounded upper end: a line to the top)."""
    # An unresolved probe (b_noise null) is a lower bound: an open triangle at it.
    bounds = [(r["step"], (r.get("b_noise_ci95") or [None])[0]) for r in hess
              if not finite(r.get("b_noise")) and finite((r.get("b_noise_ci95") or [None])[0])
              and (r.get("b_noise_ci95") or [0])[0] > 0]
    if bounds:
        s, b = zip(*bounds)
        ax.plot(s, b, "k^", mfc="none", label="B_noise unresolved (>= the triangle)")
    rows = [r for r in hess if finite(r.get("b_noise"))]
    if not rows:
        return
    steps = [r["step"] for r in rows]
    values = [r["b_noise"] for r in rows]
    ci = [r.get("b_noise_ci95") or [None, None] for r in rows]
    lo = [v - c[0] if finite(c[0]) else 0 for v, c in zip(values, ci)]
    hi = [c[1] - v if finite(c[1]) else 0 for v, c in zip(values, ci)]
    ax.errorbar(steps, values, yerr=[lo, hi], fmt="k^", capsize=3, label="B_noise (Hessian, 95%)")


def _interval(fit, key):
    """fit.json's intervals.KEY as (lo, hi), hi = inf where it is open above ([lo, null]: B_crit
    above the sweep), or None (null, missing, or not finite)."""
    i = (fit.get("intervals") or {}).get(key)
    if not i or len(i) != 2 or not finite(i[0]):
        return None
    if i[1] is None:
        return (i[0], math.inf)
    return tuple(i) if finite(i[1]) else None


def estimate_text(fit, key, intervals=None):
    """fit.json's KEY with its 95% interval for a legend: "300 [211, 457]", "300 [211,
    unbounded]" where it is open above; "(no interval)" where the interval is null (every figure
    lbt prints carries one or says it has none); "unresolved (>= 211)" where KEY is null but its
    interval bounds it below, "unresolved (<= 1.01)" where it bounds it above ([0, hi])."""
    band = _interval({"intervals": intervals if intervals is not None else fit.get("intervals")},
                     key)
    if fit.get(key) is None:
        if not band:
            return "unresolved"
        return f"unresolved (>= {band[0]:.3g})" if band[1] == math.inf else \
            f"unresolved (<= {band[1]:.3g})"
    if not band:
        return f"{fit[key]:.3g} (no interval)"
    hi = "unbounded" if band[1] == math.inf else f"{band[1]:.3g}"
    return f"{fit[key]:.3g} [{band[0]:.3g}, {hi}]"


def with_level(text, level=0.95):
    """A legend's TEXT with the LEVEL of the intervals it shows (" (95%)"), where it shows one: a
    bracket of numbers, not "[no interval]" or "(no interval)" alone."""
    return f"{text} ({100 * level:.3g}%)" if re.search(r"\[[-0-9.]", text) else text


def mark_noise_scales(ax, fit):
    """On a plot whose x axis is the batch size: the measured B_simple as a line with its band,
    and B_noise (Hessian probes) likewise, beside the fitted B_crit. Nothing when absent."""
    if not fit:
        return
    for key, color, label in (("B_simple", "C2", "B_simple measured"),
                              ("B_noise_measured", "C4", "B_noise measured (Hessian)")):
        value = fit.get(key)
        band = _interval(fit, key)
        if not finite(value):  # unresolved: bounded below only, a dotted line at the bound
            if band and finite(band[0]) and band[0] > 0:
                ax.axvline(band[0], color=color, lw=1.2, ls=":",
                           label=f"{label} >= {band[0]:.3g} (unresolved)")
            continue
        # the median over trials' interval holds its own coverage (fit.json interval_coverage)
        level = (fit.get("interval_coverage") or {}).get(key) or 0.95
        ax.axvline(value, color=color, lw=1.2,
                   label=with_level(f"{label} = {estimate_text(fit, key)}", level))
        if band:  # open above: past the line and the data
            hi = band[1] if finite(band[1]) else max(ax.get_xlim()[1], value) * 1.5
            # Named: unnamed, B_noise's band read as a second B_crit interval (2026-11-29 audit).
            ax.axvspan(max(band[0], 1e-12), hi, color=color, alpha=0.12,
                       label=f"{label}: its interval")


def noise_over_training(sweep_dir, out_png):
    """B_simple "now" over training of each best trial (best.csv), against examples seen, one
    line per batch size. Returns the path written, or None when no trial measured noise."""
    import csv

    sweep_dir = Path(sweep_dir)
    best = sweep_dir / "best.csv"
    if not best.exists():
        return None
    with best.open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("run_dir")]
    for r in rows:  # an edited best.csv must not send us outside the sweep's trials
        parts = Path(r["run_dir"]).parts
        if Path(r["run_dir"]).is_absolute() or not parts or parts[0] != "trials" or ".." in parts:
            raise ValueError(f"{best}: run_dir '{r['run_dir']}' is not a trial folder of this "
                             "sweep (trials/NAME); restore best.csv")
    curves = []
    for r in sorted(rows, key=lambda r: float(r["batch_size"])):
        data = load(sweep_dir / r["run_dir"])
        name = "two_batch" if data.get("two_batch") else "per_example"
        # x: examples seen before the measured gradient (step 0 has none: left off the log axis);
        # an unresolved record is a gap in the line and its lower bound a triangle (the curves
        # stopped where B_simple grew past resolving, 2026-11-29 audit)
        records = [j for j in data.get(name, []) if j["step"] > 0]
        points = [(j["step"] * float(r["batch_size"]),
                   j["b_simple"] if finite(j.get("b_simple")) else math.nan) for j in records]
        bounds = [(j["step"] * float(r["batch_size"]), j["b_simple_ci95"][0]) for j in records
                  if not finite(j.get("b_simple"))
                  and finite((j.get("b_simple_ci95") or [None])[0]) and j["b_simple_ci95"][0] > 0]
        if any(finite(v) for _, v in points) or bounds:
            curves.append((int(float(r["batch_size"])), name, points, bounds))
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    cmap = plt.get_cmap("viridis")
    for k, (batch, name, points, bounds) in enumerate(curves):
        color = cmap(k / max(len(curves) - 1, 1))
        x, y = zip(*points)
        ax.plot(x, y, "o-", ms=2.5, color=color, label=f"B = {batch} ({name})")
        if bounds:
            bx, by = zip(*bounds)
            ax.plot(bx, by, "^", ms=3.5, mfc="none", color=color)
    if any(c[3] for c in curves):
        ax.plot([], [], "^", mfc="none", color="0.4", label="unresolved: >= the triangle")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("examples seen (step x B)")
    ax.set_ylabel("B_simple now (examples)")
    ax.set_title("Gradient noise scale over training, best trial per batch size")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return out_png


def draw_noise(ax, data):
    """A run's noise.jsonl (load) on `ax`: each estimator's "now" B_simple with its band, its
    unresolved records as lower bounds, the EMA, and the B_noise probes."""
    for name, color in (("two_batch", "C0"), ("per_example", "C1")):
        records = data.get(name, [])
        if not records:
            continue
        # Every record: a value, or a gap (NaN) where unresolved, so the line does not join
        # across stretches it never measured (it drew only the resolved ones, joined).
        steps = [r["step"] for r in records]
        values = [r["b_simple"] if finite(r.get("b_simple")) else math.nan for r in records]
        window = records[-1].get("window_steps")
        if any(finite(v) for v in values):
            ax.plot(steps, values, color=color, label=f"B_simple now ({name}, window {window} steps)")
        # Unresolved (|G|^2 not resolved from 0): a lower bound, an open triangle at it (they
        # were left out, and the axis ended before the run did).
        bounds = [(r["step"], r["b_simple_ci95"][0]) for r in records
                  if not finite(r.get("b_simple")) and finite((r.get("b_simple_ci95") or [None])[0])
                  and r["b_simple_ci95"][0] > 0]
        if bounds:
            s, b = zip(*bounds)
            ax.plot(s, b, "^", color=color, mfc="none", ms=4,
                    label=f"B_simple unresolved ({name}): >= the triangle")
        # Fieller intervals, where bounded: gaps as the line's; a lower end of 0 (which a log
        # axis cannot show) runs to the axis' bottom, not to B_simple / 100 as if bounded there
        bounded = [finite(r.get("b_simple")) and finite(r["b_simple_ci95"][1]) for r in records]
        hi = [r["b_simple_ci95"][1] if ok else math.nan for r, ok in zip(records, bounded)]
        positive = [v for v in values + [b for _, b in bounds] if finite(v) and v > 0]
        floor = min(positive) / 10 if positive else 1.0
        lo = [max(r["b_simple_ci95"][0], floor) if ok else math.nan
              for r, ok in zip(records, bounded)]
        if any(bounded):
            ax.fill_between(steps, lo, hi, color=color, alpha=0.2,
                            label=f"95% interval ({name}; a lower end of 0 to the axis' bottom)")
            bottom = min(floor, ax.get_ylim()[0]) if ax.get_ylim()[0] > 0 else floor
            ax.set_ylim(bottom=bottom)
        ema = [(r["step"], r["b_simple_ema"]) for r in data.get(name, []) if finite(r.get("b_simple_ema"))]
        if ema:
            s, v = zip(*ema)
            ax.plot(s, v, color=color, linestyle="--", label=f"B_simple averaged ({name}, EMA)")
        # Where the EMA is unresolved its lower bound, as the "now" line's: the dashed line just
        # stopped there, as if the average had ended (2026-11-29 audit).
        ema_bounds = [(r["step"], r["b_simple_ema_ci95"][0]) for r in records
                      if not finite(r.get("b_simple_ema"))
                      and finite((r.get("b_simple_ema_ci95") or [None])[0])
                      and r["b_simple_ema_ci95"][0] > 0]
        if ema_bounds:
            s, b = zip(*ema_bounds)
            ax.plot(s, b, "^", color=color, mfc="none", ms=4,  # a lower bound, as above
                    label=f"B_simple averaged unresolved ({name}): >= the triangle")
    draw_b_noise(ax, data.get("hessian", []))


def main():
    matplotlib.use("Agg")  # headless: CI and clusters have no display
    run_dir = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else run_dir / "noise.png"
    fig, ax = plt.subplots(figsize=(7, 5.5))
    draw_noise(ax, load(run_dir))
    ax.set_xlabel("step")
    ax.set_ylabel("noise scale (examples)")
    ax.set_yscale("log")
    ax.set_title(f"Gradient noise scale: {run_dir.name}")
    # Below the axes: over them, its 11 entries covered the first 500 steps' data (2026-11-29).
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120, bbox_inches="tight")  # the legend below the axes included
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
