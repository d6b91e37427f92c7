"""`lbt schedule --plot` against epochs (notebooks/lbt_plot.py's draw_schedule): with several
batches each column's steps are divided by its own steps per epoch, so runs over the same data
end at the same epoch, the boundaries moved alike; through the binary, --plot-x takes step,
epoch or auto and refuses anything else (exit 2).

usage: /usr/bin/python3 check_schedule_plot.py NOTEBOOKS_DIR LBT CONFIG SCRATCH_DIR
"""
import subprocess
import sys
from pathlib import Path

notebooks, lbt, config, scratch = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
sys.path.insert(0, notebooks)
import lbt_plot  # noqa: E402
from lbt_plot import plt  # noqa: E402

failures = []


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


scratch.mkdir(parents=True, exist_ok=True)
# Three epochs at batch 128 (10 steps each) and at batch 512 (2 steps each, then the run ends).
csv = scratch / "two_batches.csv"
rows = ["step,lr_B128,lr_B512"]
for step in range(30):
    rows.append(f"{step},0.1," + ("0.4" if step < 6 else ""))
csv.write_text("\n".join(rows) + "\n")
marks = {"lr_B128": [["decay start", 20]], "lr_B512": [["decay start", 4]]}
fig, ax = plt.subplots()
lbt_plot.draw_schedule(ax, csv, marks=marks, x="epoch",
                       steps_per_epoch={"lr_B128": 10, "lr_B512": 2})
ends = [line.get_xdata()[-1] for line in ax.get_lines() if len(line.get_xdata()) > 2]
expect(ends == [2.9, 2.5], f"each column's last step in its own epochs: {ends}")
verticals = sorted(line.get_xdata()[0] for line in ax.get_lines() if len(line.get_xdata()) == 2)
expect(verticals == [2.0, 2.0], f"decay starts at epoch 2 in both: {verticals}")
expect(ax.get_xlabel() == "epoch", f"x label: {ax.get_xlabel()}")
plt.close(fig)

base = [lbt, "schedule", "--config", config, "-b", "128,4096", "--train-size", "50000"]
for x, code in (("epoch", 0), ("auto", 0), ("step", 0), ("epochs", 2)):
    r = subprocess.run(base + ["--plot", str(scratch / f"{x}.png"), "--plot-x", x],
                       capture_output=True, text=True)
    expect(r.returncode == code, f"--plot-x {x}: exit {r.returncode}, want {code} {r.stderr[-200:]}")
expect((scratch / "epoch.png").exists(), "the plot against epochs was written")
sys.exit(1 if failures else 0)
