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


def draw_best(ax, best, per_step) -> None:
    """The best (B, LR) per batch size, its steps x PER_STEP (1, or the batch size for
    examples), with the spread it has: over seeds their range; one seed, the reading's bracket
    (steps_lo, steps_hi] (a 33% bracket at 3 steps was drawn as a point, 2026-11-29 audit)."""
    steps = lbt_runs.best_steps(best)
    y = steps * per_step
    if "steps_min" in best and best["seeds"].max() > 1:
        ax.errorbar(best["batch_size"], y, yerr=[y - best["steps_min"] * per_step,
                    best["steps_max"] * per_step - y], fmt="o-", color=COLORS["data"], capsize=3,
                    label=f"best (B, LR): median of {int(best['seeds'].max())} seeds, range")
    elif "steps_lo" in best and best["steps_lo"].notna().all():
        ax.errorbar(best["batch_size"], y, yerr=[y - best["steps_lo"] * per_step,
                    best["steps_hi"] * per_step - y], fmt="o-", color=COLORS["data"], capsize=3,
                    label="best trial per batch size, its bracket (steps_lo, steps_hi]")
    else:
        ax.plot(best["batch_size"], y, "o-", color=COLORS["data"],
                label="best trial per batch size")


def steps_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    t = sweep.trials
    # Where unreached trials stopped, for context (diverged/failed ones stopped early: no steps
    # to show): budget_exhausted ran its budget, pruned stopped at the best trial's steps.
    for status, marker, shade in [("budget_exhausted", "x", "0.6"), ("pruned", "|", "0.75")]:
        sub = t[t["status"] == status]
        if len(sub):
            ax.scatter(sub["batch_size"], sub["steps"], marker=marker, color=shade, s=18,
                       label=f"{status} (steps run)")
    reached = t[t["status"] == "reached_target"]
    ax.scatter(reached["batch_size"], reached["steps_to_target"], color=COLORS["data"], alpha=0.35,
               s=16, label="trials that reached the target")
    best = sweep.reached
    steps = lbt_runs.best_steps(best)
    draw_best(ax, best, 1)
    if len(best):
        b0, s0 = best["batch_size"].iloc[0], steps.iloc[0]
        b = np.geomspace(best["batch_size"].min(), best["batch_size"].max(), 100)
        ax.plot(b, s0 * b0 / b, "--", color=COLORS["perfect"], label="perfect scaling (S ∝ 1/B)")
    fit = sweep.fit
    if fit and fit.get("above_sweep"):  # S = E_min / B throughout: no knee to mark
        b = np.geomspace(best["batch_size"].min() / 1.5, best["batch_size"].max() * 1.5, 200)
        ax.plot(b, lbt_runs.fitted_steps(fit, b), color=COLORS["fit"],
                label=with_level(f"fit: perfect scaling at every B swept, B_crit "
                                 f"{estimate_text(fit, 'B_crit')}"))
    elif fit and fit.get("B_crit") is None:  # unresolved: the steps do not fall with the batch
        ax.axhline(fit["S_min"], color=COLORS["fit"], lw=0.8, ls=":",
                   label="fit: no critical batch (steps do not fall as B grows)")
    elif fit:
        b = np.geomspace(best["batch_size"].min() / 1.5, best["batch_size"].max() * 1.5, 200)
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
        band = (fit.get("intervals") or {}).get("B_crit")
        if band:  # the dashed line's uncertainty; open above: past the line and the data
            # (it ended at the largest batch, shading [1.5 x B_max, lo] where lo lay beyond)
            edge = max(b.max(), band[0], fit["B_crit"]) * 1.5
            ax.axvspan(band[0], band[1] if band[1] is not None else edge, color="0.5",
                       alpha=0.12, lw=0, label="B_crit (dashed), its 95% interval")
        lbt_plot_noise.mark_noise_scales(ax, fit)  # measured B_simple / B_noise beside B_crit
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("global batch size B")
    mark_adaptive(sweep, ax, "steps_to_target")
    ax.set_ylabel("steps to target")
    target = sweep.manifest.get("target", "")
    ax.set_title(f"Steps to {target} vs batch size")
    ax.legend(fontsize=7)


def examples_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    best = sweep.reached
    draw_best(ax, best, best["batch_size"])  # its bars too (it had none)
    fit = sweep.fit
    if fit and fit.get("E_min") is None:  # unresolved: the steps do not fall with the batch
        ax.plot([], [], " ", label="fit: no critical batch (steps do not fall as B grows)")
    elif fit and len(best):
        b = np.geomspace(best["batch_size"].min() / 1.5, best["batch_size"].max() * 1.5, 200)
        ax.plot(b, lbt_runs.fitted_steps(fit, b) * b, color=COLORS["fit"],
                label=with_level(f"fit: E_min={estimate_text(fit, 'E_min')}"))
        ax.axhline(fit["E_min"], color=COLORS["fit"], lw=0.8, ls=":")
    mark_adaptive(sweep, ax, "examples_to_target")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("global batch size B")
    ax.set_ylabel("examples to target")
    ax.set_title("Examples to target vs batch size")
    ax.legend(fontsize=8)


def lr_vs_batch(sweep: lbt_runs.Sweep, ax) -> None:
    t = sweep.trials
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
    else:
        ax.plot(best["batch_size"], best["lr"], "o-", color=COLORS["data"], label="best LR")
    if len(best):
        ref = sweep.manifest.get("reference_batch", best["batch_size"].iloc[0])
        # Anchor both rules at the best LR nearest the reference batch.
        i = int(np.argmin(np.abs(np.log(best["batch_size"] / ref))))
        b0, lr0 = best["batch_size"].iloc[i], best["lr"].iloc[i]
        b = np.geomspace(t["batch_size"].min(), t["batch_size"].max(), 100)
        ax.plot(b, lr0 * b / b0, "--", color=COLORS["linear"], label="linear rule")
        ax.plot(b, lr0 * np.sqrt(b / b0), "--", color=COLORS["sqrt"], label="sqrt rule")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("global batch size B")
    ax.set_ylabel("learning rate")
    ax.set_title("Best LR vs batch size")
    ax.legend(fontsize=8)


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
        fig, ax = plt.subplots()
        draw(sweep, ax)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png")
        plt.close(fig)
        print(out / f"{name}.png")
    if lbt_plot_noise.noise_over_training(sweep.path, out / f"{NOISE_PLOT}.png"):
        print(out / f"{NOISE_PLOT}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
