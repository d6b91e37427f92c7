#!/usr/bin/python3
"""Plot B_simple over training from a run directory's noise.jsonl: "now" (the window's trend at
each step, with its 95% interval) and "averaged" (the EMA, dashed), per estimator.

Usage: /usr/bin/python3 notebooks/lbt_plot_noise.py RUN_DIR [OUT.png]
Reads only noise.jsonl (keeping the last line per step and estimator, as runs may be restarted)
and writes RUN_DIR/noise.png. McCandlish et al. 2018, arXiv:1812.06162.
"""
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(run_dir):
    rows = {}
    for line in (Path(run_dir) / "noise.jsonl").read_text().splitlines():
        j = json.loads(line)
        if "estimator" in j:
            rows[(j["estimator"], j["step"])] = j  # last line per (estimator, step) wins
    by_name = {}
    for (name, step), j in sorted(rows.items(), key=lambda kv: kv[0][1]):
        by_name.setdefault(name, []).append(j)
    return by_name


def finite(v):
    return v is not None and math.isfinite(v)


def main():
    run_dir = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else run_dir / "noise.png"
    data = load(run_dir)
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, color in (("two_batch", "C0"), ("per_example", "C1")):
        rows = [r for r in data.get(name, []) if finite(r.get("b_simple"))]
        if not rows:
            continue
        steps = [r["step"] for r in rows]
        window = rows[-1].get("window_steps")
        ax.plot(steps, [r["b_simple"] for r in rows], color=color,
                label=f"B_simple now ({name}, window {window} steps)")
        # Fieller intervals: lower end >= 0, upper end null (unbounded) while |G|^2 is not
        # resolved; a log axis shows the lower end from B_simple / 100 up
        band = [(r["step"], max(r["b_simple_ci95"][0], r["b_simple"] / 100), r["b_simple_ci95"][1])
                for r in rows if finite(r["b_simple_ci95"][0]) and finite(r["b_simple_ci95"][1])]
        if band:
            s, lo, hi = zip(*band)
            ax.fill_between(s, lo, hi, color=color, alpha=0.2, label=f"95% interval ({name})")
        ema = [(r["step"], r["b_simple_ema"]) for r in data.get(name, []) if finite(r.get("b_simple_ema"))]
        if ema:
            s, v = zip(*ema)
            ax.plot(s, v, color=color, linestyle="--", label=f"B_simple averaged ({name}, EMA)")
    hess = data.get("hessian", [])
    if hess:
        ax.plot([r["step"] for r in hess], [r["b_noise"] for r in hess], "k^", label="B_noise (Hessian)")
    ax.set_xlabel("step")
    ax.set_ylabel("noise scale (examples)")
    ax.set_yscale("log")
    ax.set_title(f"Gradient noise scale: {run_dir.name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
