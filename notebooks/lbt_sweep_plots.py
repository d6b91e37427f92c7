"""Plots of an lbt sweep directory, written to SWEEP_DIR/plots/ (run by `lbt sweep` / `lbt fit`).

  steps_vs_batch.png     steps to target vs batch size (log-log): the median over seeds with
                         their range, unreached and pruned trials where they stopped, the
                         perfect-scaling line, fitted S = S_min (1 + B_crit/B) and the regimes
                         (Shallue et al. 2018)
  examples_vs_batch.png  examples to target vs batch size, E_min and the fit
                         (both: with sweep.adaptive, the adaptive trials' median and range as a
                         horizontal line and band, from adaptive.json)
  lr_vs_batch.png        best LR vs batch size (bars: the search's bracket) with the fitted
                         law lr ~ B^alpha, McCandlish's eps_opt(B) and the linear/sqrt rules
  noise_vs_training.png  each best trial's B_simple over training (when noise was measured)

usage: /usr/bin/python3 notebooks/lbt_sweep_plots.py SWEEP_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lbt_runs  # noqa: E402
import lbt_plot_noise  # noqa: E402
from lbt_plot_noise import estimate_text, with_level  # noqa: E402
from lbt_runs import COLORS, plt, np  # noqa: E402


def mark_adaptive(sweep: lbt_runs.Sweep, ax, key: str) -> None:
    """adaptive.json's `key` (steps_to_target / examples_to_target): median line, range band."""
    a = lbt_runs.read_json(sweep.path / "adaptive.json")
    if not a or a[key]["median"] is None:
        return
    s = a[key]
    ax.axhspan(s["min"], s["max"], color=COLORS["sqrt"], alpha=0.15)
    ax.axhline(s["median"], color=COLORS["sqrt"], lw=1.2,
               label=f"adaptive batch: median of {a['seeds_reached']} seeds, range")


# Statuses drawn as points (the others stopped before measuring anything to show).
DRAWN = ("reached_target", "budget_exhausted", "pruned")


def note(ax, text: str) -> None:
    """A legend line with no mark: what the plot does not draw, or could not."""
    ax.plot([], [], " ", label=text)


def reading_text(sweep: lbt_runs.Sweep) -> str:
    """Which reading of steps-to-target the points are (fit.json's target_definition, else
    sweep.csv's), and whether fit.json's sensitivity found the readings disagree."""
    fit = sweep.fit or {}
    reading = fit.get("target_definition")
    if reading is None and "target_definition" in sweep.trials:
        readings = sweep.trials["target_definition"].dropna().unique()
        reading = "/".join(map(str, readings)) if len(readings) else None
    text = f"steps read by {reading}" if reading else ""
    if (fit.get("sensitivity") or {}).get("agree") is False:
        text += "; the readings disagree: see fit.json's sensitivity"
    return text


def title(ax, what: str, sweep: lbt_runs.Sweep) -> None:
    target = sweep.manifest.get("target", "target")
    reading = reading_text(sweep)
    ax.set_title(f"{what} to {target} vs batch size" + (f"\n({reading})" if reading else ""),
                 fontsize=10)


def legend_below(ax) -> None:
    """The legend under the axes: inside, its 10 lines covered the points (frameless, the
    data showed through its text)."""
    entries = len(ax.get_legend_handles_labels()[1])
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14),
              ncol=2 if entries > 5 else 1)


def log_axes(ax) -> None:
    """Log-log, batch sizes in powers of 2; y ticks labelled between decades too (one labelled
    tick over 1.4e4-2.5e5 before). An axis with nothing positive on it stays linear (log
    scaling it raised ValueError at savefig: a sweep where no trial reached the target)."""
    from matplotlib.ticker import LogFormatterSciNotation
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False,
                                                         minor_thresholds=(2, 1.2)))


def has_positive(ax) -> bool:
    """Whether anything drawn has a y above 0 (the data limits start empty: -inf above)."""
    return ax.dataLim.intervaly[1] > 0


def seeds_text(best) -> str:
    """The legend's count of seeds: best.csv's, with the batch sizes where fewer reached."""
    if "seeds_reached" not in best:
        return f"median of {int(best['seeds'].max())} seeds"
    run, reached = best["seeds"].astype(int), best["seeds_reached"].fillna(0).astype(int)
    text = f"median over {run.max()} seeds" if run.min() == run.max() else \
        f"median over {run.min()}-{run.max()} seeds"
    short = sorted({(r, n) for r, n in zip(reached, run) if r < n})
    for r, n in short:
        batches = ", ".join(str(b) for b in best["batch_size"][(reached == r) & (run == n)])
        text += f"; {r} of {n} reached at B={batches}"
    return text


def draw_best(ax, best, per_step) -> None:
    """The best (B, LR) per batch size, its steps x PER_STEP (1, or the batch size for
    examples), with the spread it has: over seeds the range of those that reached; one seed,
    the reading's bracket (steps_lo, steps_hi] (a 33% bracket at 3 steps was drawn as a point,
    2026-11-29 audit)."""
    if not len(best):
        return
    steps = lbt_runs.best_steps(best)
    y = steps * per_step
    if "steps_min" in best and best["seeds"].max() > 1:
        ax.errorbar(best["batch_size"], y, yerr=[y - best["steps_min"] * per_step,
                    best["steps_max"] * per_step - y], fmt="o-", color=COLORS["data"], capsize=3,
                    label=f"best (B, LR): {seeds_text(best)}; bar: range of those reached")
    elif "steps_lo" in best and best["steps_lo"].notna().all():
        ax.errorbar(best["batch_size"], y, yerr=[y - best["steps_lo"] * per_step,
                    best["steps_hi"] * per_step - y], fmt="o-", color=COLORS["data"], capsize=3,
                    label="best trial per batch size, its bracket (steps_lo, steps_hi]")
    else:
        ax.plot(best["batch_size"], y, "o-", color=COLORS["data"],
                label="best trial per batch size")


def censored(sweep: lbt_runs.Sweep) -> list[tuple[float, float]]:
    """(batch size, lower bound on its median steps) for each batch size whose median the
    seeds short of the target leave unknown (fit.json's batch_sizes_censored)."""
    rows = (sweep.fit or {}).get("batch_sizes_censored") or []
    return [(r["batch_size"], r["steps_at_least"]) for r in rows
            if r.get("steps_at_least") is not None]


def draw_censored(ax, sweep: lbt_runs.Sweep, per_step: bool) -> None:
    """Each unknown median as a lower bound: an open triangle at "≥ N" (it vanished: a gap in
    the line, and the legend still said the median of every seed). Batch sizes with an unknown
    median and no bound in fit.json are named in a legend line."""
    bounds = censored(sweep)
    for b, steps in bounds:
        y = steps * (b if per_step else 1)
        ax.plot([b], [y], "^", mfc="none", ms=8, color=COLORS["data"])
        ax.annotate(f"≥ {y:.3g}", (b, y), textcoords="offset points", xytext=(6, 4), fontsize=7)
    if bounds:
        ax.plot([], [], "^", mfc="none", color=COLORS["data"],
                label="median unknown (seeds short of the target): at least the triangle")
    best = sweep.reached
    unknown = best["batch_size"][lbt_runs.best_steps(best).isna()]
    unbounded = [str(b) for b in unknown if b not in {c[0] for c in bounds}]
    if unbounded:
        note(ax, f"median unknown at B={', '.join(unbounded)}: not drawn")


def undrawn_trials(sweep: lbt_runs.Sweep) -> str:
    """'2 diverged, 1 failed' for the trials no plot draws (they stopped before measuring), or
    '' (they were drawn nowhere and no legend said so)."""
    t = sweep.trials
    counts = t[~t["status"].isin(DRAWN)]["status"].value_counts()
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def draw_perfect_scaling(ax, best) -> None:
    """S ∝ 1/B through the smallest batch size with a known median (anchored on the first row,
    an unknown median took the line away and left its legend entry)."""
    steps = lbt_runs.best_steps(best)
    known = best[steps.notna()]
    if known["batch_size"].nunique() < 2:
        return
    b0, s0 = known["batch_size"].iloc[0], steps[steps.notna()].iloc[0]
    b = np.geomspace(best["batch_size"].min(), best["batch_size"].max(), 100)
    ax.plot(b, s0 * b0 / b, "--", color=COLORS["perfect"], label="perfect scaling (S ∝ 1/B)")


def draw_fit_steps(ax, fit, best) -> None:
    """fit.json's S(B), S_min, regimes and B_crit with its interval on the steps plot."""
    b = np.geomspace(best["batch_size"].min() / 1.5, best["batch_size"].max() * 1.5, 200)
    if fit.get("above_sweep"):  # S = E_min / B throughout: no knee to mark
        ax.plot(b, lbt_runs.fitted_steps(fit, b), color=COLORS["fit"],
                label=with_level(f"fit: perfect scaling at every B swept, B_crit "
                                 f"{estimate_text(fit, 'B_crit')}"))
        return
    if fit.get("B_crit") is None:  # unresolved: the steps do not fall with the batch
        ax.axhline(fit["S_min"], color=COLORS["fit"], lw=0.8, ls=":",
                   label="fit: no critical batch (steps do not fall as B grows)")
        return
    ax.plot(b, lbt_runs.fitted_steps(fit, b), color=COLORS["fit"],
            label=with_level(f"fit: S_min={estimate_text(fit, 'S_min')}, "
                             f"B_crit={estimate_text(fit, 'B_crit')}"))
    ax.axhline(fit["S_min"], color=COLORS["fit"], lw=0.8, ls=":")
    reg = fit["regimes"]
    lo, hi = reg["perfect_scaling"]["model_max_batch"], reg["maximal_data_parallelism"]["model_min_batch"]
    ax.axvspan(b.min(), max(lo, b.min()), color=COLORS["linear"], alpha=0.08, label="perfect scaling")
    if hi < b.max():
        ax.axvspan(hi, b.max(), color=COLORS["fit"], alpha=0.08, label="maximal data parallelism")
    ax.axvline(fit["B_crit"], color=COLORS["fit"], lw=0.8, ls="--")
    lbt_plot_noise.mark_noise_scales(ax, fit)  # measured B_simple / B_noise beside B_crit


def shade_b_crit(ax, fit) -> None:
    """B_crit's interval behind its dashed line; one open above runs to the axis' right edge,
    drawn last so that edge is final (it ended at 1.5 x B_crit, short of the unreached batch
    sizes' markers, and read as closed)."""
    band = (fit.get("intervals") or {}).get("B_crit") if fit and fit.get("B_crit") else None
    if not band:
        return
    right = band[1]
    if right is None:
        right = max(ax.get_xlim()[1], band[0] * 1.5, fit["B_crit"] * 1.5)
    ax.axvspan(band[0], right, color="0.5", alpha=0.12, lw=0,
               label="B_crit (dashed), its 95% interval")
    if band[1] is None:
        ax.set_xlim(right=right)


def fit_status(ax, sweep: lbt_runs.Sweep) -> None:
    """A legend line where there is no fit to draw (it listed lines that were not drawn)."""
    if not len(sweep.reached):
        note(ax, "no trial reached the target: nothing to fit")
    elif sweep.fit is None:
        note(ax, "no fit (fit.json absent: it needs 3 batch sizes that reached the target)")


def steps_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    t = sweep.trials
    # Where unreached trials stopped, for context: budget_exhausted ran its budget, pruned
    # stopped at the best trial's steps; diverged/failed/pending ones measured nothing (a line).
    for status, marker, shade in [("budget_exhausted", "x", "0.6"), ("pruned", "|", "0.75")]:
        sub = t[t["status"] == status]
        if len(sub):
            ax.scatter(sub["batch_size"], sub["steps"], marker=marker, color=shade, s=18,
                       label=f"{status} (steps run)")
    reached = t[t["status"] == "reached_target"]
    if len(reached):
        ax.scatter(reached["batch_size"], reached["steps_to_target"], color=COLORS["data"],
                   alpha=0.35, s=16, label="trials that reached the target")
    best = sweep.reached
    draw_best(ax, best, 1)
    draw_censored(ax, sweep, per_step=False)
    draw_perfect_scaling(ax, best)
    if sweep.fit and len(best):
        draw_fit_steps(ax, sweep.fit, best)
    fit_status(ax, sweep)
    if undrawn_trials(sweep):
        note(ax, f"not drawn: {undrawn_trials(sweep)} trials")
    mark_adaptive(sweep, ax, "steps_to_target")
    finish(ax, sweep, "Steps", "steps to target")
    if sweep.fit and len(best):
        shade_b_crit(ax, sweep.fit)
    legend_below(ax)


def finish(ax, sweep: lbt_runs.Sweep, what: str, ylabel: str) -> None:
    """Axes, labels and the title shared by the steps and examples plots."""
    if has_positive(ax):
        log_axes(ax)
    ax.set_xlabel("global batch size B")
    ax.set_ylabel(ylabel)
    title(ax, what, sweep)


def examples_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    best = sweep.reached
    draw_best(ax, best, best["batch_size"])  # its bars too (it had none)
    draw_censored(ax, sweep, per_step=True)
    fit = sweep.fit
    if fit and fit.get("E_min") is None:  # unresolved: the steps do not fall with the batch
        note(ax, "fit: no critical batch (steps do not fall as B grows)")
    elif fit and len(best):
        b = np.geomspace(best["batch_size"].min() / 1.5, best["batch_size"].max() * 1.5, 200)
        ax.plot(b, lbt_runs.fitted_steps(fit, b) * b, color=COLORS["fit"],
                label=with_level(f"fit: E_min={estimate_text(fit, 'E_min')}"))
        ax.axhline(fit["E_min"], color=COLORS["fit"], lw=0.8, ls=":")
    fit_status(ax, sweep)
    mark_adaptive(sweep, ax, "examples_to_target")
    finish(ax, sweep, "Examples", "examples to target")
    legend_below(ax)


def lr_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    t = sweep.trials
    if len(t):
        ax.scatter(t["batch_size"], t["lr"], color="0.75", s=14, label="LRs tried")
    best = sweep.reached
    law = (sweep.fit or {}).get("lr_law") or {}
    if law.get("fitted"):
        pts = law["points"]
        lr = np.array([p["lr"] for p in pts])
        lo = np.array([p["lr_bracket"][0] for p in pts])
        hi = np.array([p["lr_bracket"][1] for p in pts])
        ax.errorbar([p["batch_size"] for p in pts], lr, yerr=[lr - lo, hi - lr], fmt="o",
                    color=COLORS["data"], capsize=3, label="best LR (bar: search bracket)")
        b = np.geomspace(t["batch_size"].min(), t["batch_size"].max(), 100)
        ci = sweep.fit["intervals"].get("lr_law") or {}
        a = ci.get("alpha")  # null: no interval resolved
        a_text = f"[{a[0]:.2f}, {a[1]:.2f}]" if a else "[no interval]"
        ax.plot(b, law["c"] * b ** law["alpha"], color=COLORS["fit"],
                label=with_level(f"fit: lr ∝ B^{law['alpha']:.2f} {a_text}"))
        if law.get("B_noise_resolved"):
            ax.plot(b, law["eps_max"] / (1 + law["B_noise"] / b), ":", color=COLORS["fit"],
                    label=with_level("eps_max/(1+B_noise/B): B_noise="
                                     f"{estimate_text(law, 'B_noise', ci)}"))
    elif len(best):
        ax.plot(best["batch_size"], best["lr"], "o-", color=COLORS["data"], label="best LR")
    else:
        note(ax, "no trial reached the target: no best LR")
    # A best LR at the edge of those tried bounds the optimum on one side: ^ above, v below.
    for side, marker in (("above", "^"), ("below", "v")):
        edge = [p for p in law.get("edge_points", []) if p["optimum"] == side]
        if edge:
            ax.scatter([p["batch_size"] for p in edge], [p["lr"] for p in edge], marker=marker,
                       s=50, color=COLORS["data"], zorder=3,
                       label=f"best LR at the edge of those tried (optimum {side})")
    if len(best) and t["batch_size"].nunique() > 1:  # one batch size: the rules are a point
        ref = sweep.manifest.get("reference_batch", best["batch_size"].iloc[0])
        # Anchor both rules at the best LR nearest the reference batch.
        i = int(np.argmin(np.abs(np.log(best["batch_size"] / ref))))
        b0, lr0 = best["batch_size"].iloc[i], best["lr"].iloc[i]
        b = np.geomspace(t["batch_size"].min(), t["batch_size"].max(), 100)
        ax.plot(b, lr0 * b / b0, "--", color=COLORS["linear"], label="linear rule")
        ax.plot(b, lr0 * np.sqrt(b / b0), "--", color=COLORS["sqrt"], label="sqrt rule")
    if has_positive(ax):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel("global batch size B")
    ax.set_ylabel("learning rate")
    ax.set_title("Best LR vs batch size")
    legend_below(ax)


def best_table(sweep: lbt_runs.Sweep):
    """best.csv per batch size with the steps the plots and the fit read: the median over
    seeds (sweep.ipynb showed seed 0's best trial, other numbers for the same point)."""
    best = sweep.best.sort_values("batch_size", ignore_index=True)
    steps = lbt_runs.best_steps(best)
    table = best[["batch_size", "trial", "lr", "status"]].assign(
        steps=steps, examples=steps * best["batch_size"])
    more = ["seeds", "seeds_reached", "steps_min", "steps_max", "reached", "trials", "lr_at_edge"]
    return table.join(best[[c for c in more if c in best]])


def fit_lines(fit: dict) -> list[str]:
    """fit.json's figures as sweep.ipynb prints them: each with its interval, which may be
    open above or absent (formatting a null bound as a number raised TypeError)."""
    level = (fit.get("intervals") or {}).get("level") or 0.95
    lines = [f"{k:7s} = {with_level(estimate_text(fit, k), level)}"
             for k in ("S_min", "E_min", "B_crit")]
    regimes = fit.get("regimes") or {}  # null where no critical batch was found
    for name in ("perfect_scaling", "diminishing_returns", "maximal_data_parallelism"):
        if name in regimes:
            lines.append(f"{name:25s} B in {regimes[name]['batch_sizes']}")
    if fit.get("B_simple") is not None:
        lines.append("measured B_simple (averaged, median of the best trials): "
                     + lbt_runs.fmt(fit["B_simple"]))
    return lines


PLOTS = [("steps_vs_batch", steps_vs_batch), ("examples_vs_batch", examples_vs_batch),
         ("lr_vs_batch", lr_vs_batch)]
NOISE_PLOT = "noise_vs_training"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1]) / "plots"
    # A sweep's earlier plots go first: if this run fails (a damaged sweep.json) or draws no
    # noise plot, no stale figure is left beside the new fit.json.
    if (Path(argv[1]) / "sweep.csv").exists():
        for name in [n for n, _ in PLOTS] + [NOISE_PLOT]:
            (out / f"{name}.png").unlink(missing_ok=True)
    sweep = lbt_runs.load_sweep(argv[1])
    lbt_runs.style()
    out.mkdir(exist_ok=True)
    for name, draw in PLOTS:
        fig, ax = plt.subplots(figsize=(9, 6.4))  # room for the legend below
        draw(sweep, ax)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png")
        plt.close(fig)
        print(out / f"{name}.png")
    if lbt_plot_noise.noise_over_training(sweep.path, out / f"{NOISE_PLOT}.png"):
        print(out / f"{NOISE_PLOT}.png")
    return 0


if __name__ == "__main__":
    # Only as a script (lbt sweep, lbt fit): sweep.ipynb imports this module and keeps its
    # inline backend.
    plt.switch_backend("Agg")
    sys.exit(main(sys.argv))
