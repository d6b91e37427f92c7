"""The sweep plots, sweep.ipynb's helpers and lbt_target_readings.py on variants of a real seeded
sweep (data/sweep_seeds: fmnist_mlp_sweep.toml, 9 batch sizes x 3 seeds, ema reading, fit.json's
sensitivity disagreeing; its trials/ folder left out), each a case the 2026-11-29 plots audit
found drawn wrong or crashing:
  no trial reached the target, or sweep.csv has no trials: every PNG written, and said;
  a batch size whose median is unknown (fit.json batch_sizes_censored): a ">= N" marker, and the
    perfect-scaling line still drawn when that is the smallest batch size;
  failed / diverged / pending trials: counted in a legend line; seeds_reached below seeds: said;
  the reading of steps-to-target and the sensitivity's disagreement named in the titles;
  B_crit's interval open above: shaded to the axis' right edge;
  importing the plot modules keeps the caller's matplotlib backend (sweep.ipynb's inline);
  sweep.ipynb's fit lines with intervals open above or null, and its table of best.csv's medians;
  lbt_target_readings.py's median counting a seed short of a reading as above its last step.

usage: /usr/bin/python3 check_seeded_sweep.py NOTEBOOKS_DIR SWEEP_DIR SCRATCH_DIR
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")  # not the Agg the scripts choose: an import that forces Agg shows here
notebooks, sweep_dir, scratch = (Path(a) for a in sys.argv[1:4])
sys.path.insert(0, str(notebooks))
import lbt_runs  # noqa: E402
import lbt_sweep_plots  # noqa: E402
import pandas as pd  # noqa: E402
from lbt_runs import plt  # noqa: E402

failures = []


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


expect(matplotlib.get_backend() == "svg",
       f"importing the plot modules keeps the caller's backend: {matplotlib.get_backend()}")


def copy(name):
    dest = scratch / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(sweep_dir, dest)
    return dest


def edit(path, trials=None, best=None, fit=None):
    """Rewrite the copy's sweep.csv / best.csv (functions of the frame) and fit.json (a function
    of the dict, returning None to delete it, as lbt does when the fit fails)."""
    for name, change in (("sweep.csv", trials), ("best.csv", best)):
        if change:
            frame = change(pd.read_csv(path / name))
            for c in frame.columns[frame.dtypes == bool]:  # as lbt writes them, for lbt.fit_sweep
                frame[c] = frame[c].map({True: "true", False: "false"})
            frame.to_csv(path / name, index=False)
    if fit:
        new = fit(json.loads((path / "fit.json").read_text()))
        if new is None:
            (path / "fit.json").unlink()
        else:
            (path / "fit.json").write_text(json.dumps(new))
    return path


def unreach(batch_sizes):
    """No trial of these batch sizes reached the target (what lbt writes for one: best.csv's
    row unreached, its steps empty)."""
    def trials(t):
        m = t["batch_size"].isin(batch_sizes)
        t.loc[m & (t["status"] == "reached_target"), ["status", "steps"]] = ["budget_exhausted", 4000]
        t.loc[m, ["steps_to_target", "examples_to_target", "steps_lo", "steps_hi"]] = float("nan")
        t.loc[m, "best"] = False
        return t

    def best(b):
        m = b["batch_size"].isin(batch_sizes)
        b.loc[m, ["steps_to_target", "examples_to_target", "steps_median", "steps_min",
                  "steps_max"]] = float("nan")
        b.loc[m, ["status", "reached", "seeds_reached"]] = ["unreached", 0, 0]
        return b
    return trials, best


def plot(path, name):
    """The figure a plot function draws from the sweep at `path`: (legend texts, axes)."""
    fig, ax = plt.subplots(figsize=(9, 6.4))
    getattr(lbt_sweep_plots, name)(lbt_runs.load_sweep(path), ax)
    fig.canvas.draw()
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else [], ax


def run_script(path):
    """lbt_sweep_plots.py as lbt runs it: exit status, and the PNGs it left."""
    r = subprocess.run([sys.executable, str(notebooks / "lbt_sweep_plots.py"), str(path)],
                       capture_output=True, text=True)
    pngs = sorted(p.name for p in (path / "plots").glob("*.png")) if (path / "plots").exists() else []
    return r.returncode, pngs, r.stderr.strip().splitlines()[-1:]


ALL = ["examples_vs_batch.png", "lr_vs_batch.png", "steps_vs_batch.png"]

# No trial reached the target (fit.json deleted, as the sweep does when its fit fails); and a
# sweep.csv with no trials: every plot written, each saying why it is empty.
none = edit(copy("none_reached"), *unreach(list(range(1, 8193))), fit=lambda f: None)
empty = edit(copy("no_trials"), trials=lambda t: t.iloc[:0], best=lambda b: b.iloc[:0],
             fit=lambda f: None)
for path in (none, empty):
    rc, pngs, err = run_script(path)
    expect(rc == 0 and pngs == ALL, f"{path.name}: exit 0 and every PNG: rc {rc}, {pngs} {err}")
    for name in ("steps_vs_batch", "examples_vs_batch"):
        texts, _ = plot(path, name)
        expect(any("no trial reached the target" in t for t in texts)
               and not any("trials that reached" in t or "best (B, LR)" in t for t in texts),
               f"{path.name}: {name} says no trial reached it, lists nothing undrawn: {texts}")

# B=16's median unknown (2 of 3 seeds out of budget): a ">= 4000" marker at B=16, and the
# perfect-scaling line anchored on the next batch size.
def censor16(t):
    m = t["trial"].isin(["16_8", "16_9"])
    t.loc[m, ["status", "steps"]] = ["budget_exhausted", 4000]
    t.loc[m, ["steps_to_target", "steps_lo", "steps_hi"]] = float("nan")
    return t


def censor16_best(b):
    m = b["batch_size"] == 16
    b.loc[m, ["seeds_reached", "steps_median", "steps_min", "steps_max"]] = [1, float("nan"), 963, 963]
    return b


def censor16_fit(f):
    f["batch_sizes_censored"] = [{"batch_size": 16.0, "seeds": 3, "seeds_reached": 1,
                                  "steps_at_least": 4000.0}]
    return f


censored = edit(copy("censored"), censor16, censor16_best, censor16_fit)
for name, at_least in (("steps_vs_batch", "≥ 4e+03"), ("examples_vs_batch", "≥ 6.4e+04")):
    texts, ax = plot(censored, name)
    marks = [a.get_text() for a in ax.texts]
    expect(at_least in marks and any("median unknown" in t for t in texts),
           f"censored: {name} marks B=16's median as a lower bound: {marks}, {texts}")
    if name == "steps_vs_batch":
        line = [ln for ln in ax.lines if ln.get_label() == "perfect scaling (S ∝ 1/B)"]
        expect(len(line) == 1 and pd.Series(line[0].get_ydata()).notna().all(),
               "censored: the perfect-scaling line is drawn (anchored on a known median)")
        expect(any("1 of 3 reached at B=16" in t for t in texts),
               f"censored: the legend says 1 of 3 seeds reached at B=16: {texts}")

# Failed and pending trials (and the 2 diverged ones the sweep has): counted, not drawn.
def unplotted(t):
    t.loc[t["trial"] == "1024_7", "status"] = "failed"
    t.loc[t["trial"] == "2048_8", "status"] = "pending"
    return t


def two_reached(b):
    b.loc[b["batch_size"].isin([1024, 2048]), "seeds_reached"] = 2
    return b


texts, _ = plot(edit(copy("unplotted"), unplotted, two_reached), "steps_vs_batch")
expect(any("not drawn: 2 diverged, 1 failed, 1 pending" in t for t in texts),
       f"unplotted: the trials not drawn are counted: {texts}")
expect(any("2 of 3 reached at B=1024, 2048" in t for t in texts),
       f"unplotted: the legend says 2 of 3 seeds reached at B=1024, 2048: {texts}")

# The reading named, the sensitivity's disagreement said; the target in both titles; the
# examples axis labelled between its decades (one labelled tick over 1.4e4-2.5e5 before).
base = copy("base")
for name in ("steps_vs_batch", "examples_vs_batch"):
    _, ax = plot(base, name)
    title = ax.get_title()
    expect("val_accuracy>=0.85" in title and "ema" in title and "disagree" in title,
           f"{name}'s title names the target, the reading and the disagreement: {title!r}")
    if name == "examples_vs_batch":
        lo, hi = ax.get_ylim()
        labelled = [t for t in ax.yaxis.get_majorticklabels() + ax.yaxis.get_minorticklabels()
                    if t.get_text() and lo <= t.get_position()[1] <= hi]
        expect(len(labelled) >= 3, f"examples_vs_batch: >= 3 labelled y ticks: "
                                   f"{[t.get_text() for t in labelled]}")

# B_crit's interval open above with unreached batch sizes to its right: shaded to the edge.
open_above = edit(copy("open_above"), *unreach([128, 256, 512, 1024, 2048, 4096]),
                  fit=lambda f: {**f, "B_crit": 671.0,
                                 "intervals": {**f["intervals"], "B_crit": [74.6, None]}})
_, ax = plot(open_above, "steps_vs_batch")
band = [p for p in ax.patches if p.get_label() == "B_crit (dashed), its 95% interval"]
right = max(x for x, _ in band[0].get_xy()) if band else None
expect(bool(band) and right >= ax.get_xlim()[1] and right > 4096,
       f"open above: the band reaches the right edge {ax.get_xlim()[1]:.4g}: {right}")

# sweep.ipynb's fit cell: intervals open above or null, S_min / E_min null (above the sweep).
fit = json.loads((open_above / "fit.json").read_text())
lines = lbt_sweep_plots.fit_lines(fit)
expect(any("B_crit" in ln and "671 [74.6, unbounded]" in ln for ln in lines),
       f"fit lines: an interval open above: {lines}")
fit.update(S_min=None, B_crit=None, regimes=None)
fit["intervals"].update(S_min=[0, 30.0], E_min=None)
lines = lbt_sweep_plots.fit_lines(fit)
expect(any("S_min" in ln and "unresolved (<= 30)" in ln for ln in lines)
       and any("E_min" in ln and "no interval" in ln for ln in lines),
       f"fit lines: null figures and intervals: {lines}")

# sweep.ipynb's table: best.csv's median over seeds, the steps the plot and the fit read.
table = lbt_sweep_plots.best_table(lbt_runs.load_sweep(base)).set_index("batch_size")
expect(table.loc[256, "steps"] == 88 and table.loc[256, "examples"] == 88 * 256,
       f"table: B=256's median 88 steps (seed 0's best trial: 84): {table.loc[256].to_dict()}")

# lbt_target_readings.py: B=16's first passage, seeds 1926, (not met, ran 2022), 1114: the
# median 1926 (1520 over the two that met); B=64's, 1 of 3 met: a lower bound.
out = subprocess.run([sys.executable, str(notebooks / "lbt_target_readings.py"), str(base)],
                     capture_output=True, text=True).stdout
row = {ln.split("|")[1].strip(): ln for ln in out.splitlines() if ln.startswith("| ")}
expect("1926 [1114, 1926] (2 met)" in row.get("16", ""),
       f"target readings: B=16 first passage median 1926: {row.get('16')}")
expect(">= 473 (median unknown) (1 met)" in row.get("64", ""),
       f"target readings: B=64 first passage bounded below: {row.get('64')}")


def run_notebook(path):
    """sweep.ipynb executed on the sweep at `path` with the lbt module (it refits): its errors,
    and whether the plot cell showed a figure (an import set Agg over the inline backend)."""
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env.update(LBT_SWEEP_DIR=str(path), LBT_NOTEBOOKS_DIR=str(notebooks),
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    out = scratch / f"sweep_{path.name}.ipynb"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--allow-errors", "--output", str(out), str(notebooks / "sweep.ipynb")],
                   env=env, capture_output=True, text=True, check=True)
    outputs = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", [])]
    errors = [f"{o['ename']}: {o['evalue'][:200]}" for o in outputs if o["output_type"] == "error"]
    return errors, any("image/png" in o.get("data", {}) for o in outputs)


# sweep.ipynb end to end: figures shown; no error where B_crit's interval is open above, where
# fewer than 3 batch sizes reached the target (the refit fails), or where none did.
two = edit(copy("two_batch_sizes"), *unreach([64, 128, 256, 512, 1024, 2048, 4096]))
for path in (base, open_above, two, none):
    errors, figures = run_notebook(path)
    expect(not errors and figures, f"sweep.ipynb on {path.name}: no error, figures shown: "
                                   f"{errors}, figures {figures}")
sys.exit(1 if failures else 0)
