"""The sweep plots (notebooks/lbt_sweep_plots.py) on copies of the committed test sweep: with a
resolved fit every fitted figure in a legend carries its 95% interval (S_min, B_crit, E_min:
"value [lo, hi]"), and with a fit that found no critical batch (fit.json's B_crit and E_min null,
as lbt fit writes when the steps do not fall with the batch) every plot is still drawn and says
so instead of failing; likewise with B_crit above the sweep (B_crit null, E_min measured: the
fitted line S = E_min / B is drawn) and with B_crit's interval open above ([lo, null]: the legend
says "unbounded" and the band runs to the plot's edge). A legend that shows an interval states
its level, "(95%)"; one that shows none does not.

usage: /usr/bin/python3 check_plot_legends.py NOTEBOOKS_DIR SWEEP_DIR SCRATCH_DIR
"""
import json
import re
import shutil
import sys
from pathlib import Path

notebooks, sweep_dir, scratch = (Path(a) for a in sys.argv[1:4])
sys.path.insert(0, str(notebooks))
import lbt_runs  # noqa: E402
import lbt_sweep_plots  # noqa: E402
from lbt_runs import plt  # noqa: E402

WITH_INTERVAL = r"=[0-9.e+]+ \[[0-9.e+]+, [0-9.e+]+\]"
failures = []


def legends(path):
    """Each plot's legend texts, drawn from the sweep at `path`."""
    sweep = lbt_runs.load_sweep(path)
    texts = {}
    for name in ("steps_vs_batch", "examples_vs_batch", "lr_vs_batch"):
        fig, ax = plt.subplots()
        getattr(lbt_sweep_plots, name)(sweep, ax)
        texts[name] = [t.get_text() for t in ax.get_legend().get_texts()]
        plt.close(fig)
    return texts


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def copy(name):
    dest = scratch / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(sweep_dir, dest)
    return dest


resolved = legends(copy("resolved"))
for plot, key in (("steps_vs_batch", "S_min"), ("steps_vs_batch", "B_crit"),
                  ("examples_vs_batch", "E_min")):
    found = [t for t in resolved[plot] if re.search(key + WITH_INTERVAL, t)]
    expect(bool(found), f"{plot}: {key} with its interval in {resolved[plot]}")



def bars(path, name):
    """The (x, y_low, y_high) of each bar of the plot's best points (its ErrorbarContainer)."""
    fig, ax = plt.subplots()
    getattr(lbt_sweep_plots, name)(lbt_runs.load_sweep(path), ax)
    from matplotlib.container import ErrorbarContainer
    found = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    segments = [] if not found else [(s[0][0], s[0][1], s[1][1])
                                     for s in found[0].lines[2][0].get_segments()]
    plt.close(fig)
    return segments


# The examples plot carries the steps plot's bars, each x B (it drew its best points bare): over
# seeds their range, one seed its bracket (steps_lo, steps_hi], here from half the steps.
import pandas as pd  # noqa: E402
for name, columns in (("one_seed", lambda b: {"steps_lo": b["steps_to_target"] // 2,
                                              "steps_hi": b["steps_to_target"]}),
                      ("seeds", lambda b: {"seeds": 3, "steps_median": b["steps_to_target"],
                                           "steps_min": b["steps_to_target"] // 2,
                                           "steps_max": b["steps_to_target"] + 8})):
    edited = copy(name)
    best_csv = pd.read_csv(edited / "best.csv")
    best_csv.assign(**columns(best_csv)).to_csv(edited / "best.csv", index=False)
    step_bars, example_bars = bars(edited, "steps_vs_batch"), bars(edited, "examples_vs_batch")
    expect(bool(step_bars) and len(step_bars) == len(example_bars)
           and all(abs(e[1] - s[1] * s[0]) <= 1e-9 * e[1]
                   and abs(e[2] - s[2] * s[0]) <= 1e-9 * e[2]
                   for s, e in zip(step_bars, example_bars)),
           f"{name}: examples_vs_batch's bars are the steps' x B: {step_bars} vs {example_bars}")

unresolved_dir = copy("unresolved")
fit = json.loads((unresolved_dir / "fit.json").read_text())
fit.update(B_crit=None, E_min=None, regimes=None, warning="no critical batch")
fit["intervals"].update(B_crit=None, E_min=None)
(unresolved_dir / "fit.json").write_text(json.dumps(fit))
unresolved = legends(unresolved_dir)
for plot in ("steps_vs_batch", "examples_vs_batch"):
    expect(any("no critical batch" in t for t in unresolved[plot]),
           f"{plot} of an unresolved fit says so: {unresolved[plot]}")

def edited_fit(name, **changes):
    """A copy of the sweep whose fit.json has `changes` (intervals: merged into its intervals)."""
    path = copy(name)
    fit = json.loads((path / "fit.json").read_text())
    fit["intervals"].update(changes.pop("intervals", {}))
    fit.update(changes)
    (path / "fit.json").write_text(json.dumps(fit))
    return legends(path)


above = edited_fit("above_sweep", B_crit=None, resolved=False, above_sweep=True,
                   intervals={"B_crit": [1520.0, None]})
expect(any("perfect scaling at every B swept" in t and "unresolved (>= 1.52e+03)" in t
           for t in above["steps_vs_batch"]),
       f"steps_vs_batch of a fit above the sweep draws S = E_min / B and bounds B_crit below: "
       f"{above['steps_vs_batch']}")
expect(any(re.search("E_min" + WITH_INTERVAL, t) for t in above["examples_vs_batch"]),
       f"examples_vs_batch of a fit above the sweep keeps E_min: {above['examples_vs_batch']}")
open_above = edited_fit("open_above", intervals={"B_crit": [150.0, None]})
expect(any(re.search(r"B_crit=[0-9.e+]+ \[150, unbounded\]", t)
           for t in open_above["steps_vs_batch"]),
       f"steps_vs_batch of an interval open above says unbounded: {open_above['steps_vs_batch']}")
# B_crit's band, open above from past the largest batch swept, starts at its lower end and runs
# past it (it ran back to 1.5 x the largest batch, shading below the interval); a B_simple only
# bounded below is drawn at its bound, said unresolved.
far = edited_fit("far_above", B_crit=1e6, intervals={"B_crit": [5e5, None], "B_simple": [300.0, None]},
                 B_simple=None)
fig, ax = plt.subplots()
lbt_sweep_plots.steps_vs_batch(lbt_runs.load_sweep(scratch / "far_above"), ax)
bands = [p for p in ax.patches if p.get_label() == "B_crit (dashed), its 95% interval"]
expect(len(bands) == 1, f"one B_crit band: {[p.get_label() for p in ax.patches]}")
for patch in bands:
    xs = [x for x, _ in patch.get_xy()] if hasattr(patch, "get_xy") and not hasattr(
        patch, "get_width") else [patch.get_x(), patch.get_x() + patch.get_width()]
    expect(min(xs) == 5e5 and max(xs) > 5e5, f"the open band spans [5e5, beyond]: {xs}")
expect(any("B_simple measured >= 300 (unresolved)" in t for t in far["steps_vs_batch"]),
       f"an unresolved B_simple is drawn at its bound: {far['steps_vs_batch']}")
plt.close(fig)
# A legend with an interval states its level; one with none does not claim "(95%)".
for plot, texts in resolved.items():
    for t in texts:
        if re.search(r"\[[0-9.]", t):
            expect(t.endswith("(95%)"), f"{plot}: an interval states its level: {t!r}")
no_intervals = edited_fit("no_intervals", intervals={"S_min": None, "B_crit": None,
                                                     "E_min": None})
expect(not any("(95%)" in t for t in no_intervals["steps_vs_batch"]
               + no_intervals["examples_vs_batch"] if "fit:" in t),
       f"a fit without intervals claims no level: {no_intervals}")
sys.exit(1 if failures else 0)
