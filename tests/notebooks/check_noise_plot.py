"""notebooks/lbt_plot_noise.py's drawing of a noise log written here: an unresolved record (b_simple
null, a lower bound) is a gap in the line and an open triangle at its bound, a resolved record's
band runs from its lower end, an unresolved EMA and B_noise probe are drawn at their bounds. Until
2026-11-29 unresolved records and probes were left out and the line joined across them.

usage: /usr/bin/python3 check_noise_plot.py NOTEBOOKS_DIR
"""
import math
import sys

sys.path.insert(0, sys.argv[1])
import lbt_plot_noise  # noqa: E402
from lbt_plot_noise import plt  # noqa: E402


def record(step, b, lo, hi):
    return {"step": step, "b_simple": b, "b_simple_ci95": [lo, hi], "window_steps": 10}


data = {"two_batch": [record(10, 40.0, 30.0, 50.0), record(20, None, 90.0, None),
                      dict(record(30, 60.0, 45.0, 80.0), b_simple_ema=None,
                           b_simple_ema_ci95=[70.0, None])],
        "hessian": [{"step": 0, "b_noise": 25.0, "b_noise_ci95": [20.0, 30.0]},
                    {"step": 30, "b_noise": None, "b_noise_ci95": [265.0, None]}]}
fig, ax = plt.subplots()
lbt_plot_noise.draw_noise(ax, data)
lines = {line.get_label(): line for line in ax.get_lines()}
failures = []
now = lines["B_simple now (two_batch, window 10 steps)"].get_ydata()
if not (now[0] == 40.0 and math.isnan(now[1]) and now[2] == 60.0):
    failures.append(f"the line has a gap at the unresolved record: {list(now)}")
bound = lines.get("B_simple unresolved (two_batch): >= the triangle")
if bound is None or list(bound.get_xdata()) != [20] or list(bound.get_ydata()) != [90.0]:
    failures.append(f"the unresolved record is a triangle at its bound: {list(lines)}")
# An unresolved EMA is a lower bound too: the dashed line just stopped (2026-11-29 audit).
ema_bound = lines.get("B_simple averaged unresolved (two_batch): >= the triangle")
if ema_bound is None or list(ema_bound.get_ydata()) != [70.0]:
    failures.append(f"the unresolved EMA is a triangle at its bound: {list(lines)}")
probe = lines.get("B_noise unresolved (>= the triangle)")
if probe is None or list(probe.get_ydata()) != [265.0]:
    failures.append(f"the unresolved probe is drawn at its bound: {list(lines)}")
# The sweep's noise_vs_training.png draws a trial whose records are all unresolved (bounds):
# it drew resolved ones only, and no plot at all for such a sweep.
import json  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    sweep = Path(tmp)
    (sweep / "trials" / "64_0").mkdir(parents=True)
    (sweep / "best.csv").write_text("batch_size,run_dir\n64,trials/64_0\n")
    (sweep / "trials" / "64_0" / "noise.jsonl").write_text("".join(
        json.dumps(dict(record(s, None, 100.0 + s, None), estimator="two_batch")) + "\n"
        for s in (10, 20, 30)))
    if lbt_plot_noise.noise_over_training(sweep, sweep / "nvt.png") is None:
        failures.append("noise_vs_training draws a trial whose records are bounds")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
