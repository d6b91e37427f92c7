"""notebooks/lbt_target_readings.py, as a user runs it: on the committed sweep (written before
sweep.csv had its `best` and `steps_hi` columns) the table of best trials and B_crit from
fit.json, which the script read as a KeyError traceback; twice, the change between them; on a
directory that is not a sweep's, one error line and exit status 2 (a traceback before).

usage: /usr/bin/python3 check_target_readings.py NOTEBOOKS_DIR SWEEP_DIR NOT_A_SWEEP_DIR
"""
import json
import subprocess
import sys
from pathlib import Path

script = Path(sys.argv[1]) / "lbt_target_readings.py"
sweep, not_a_sweep = Path(sys.argv[2]), sys.argv[3]
failures = []


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(*dirs):
    return subprocess.run([sys.executable, str(script), *dirs], capture_output=True, text=True)


fit = json.loads((sweep / "fit.json").read_text())
lo, hi = fit["intervals"]["B_crit"]
one = run(str(sweep))
expect(one.returncode == 0 and "Traceback" not in one.stderr, f"exit 0: {one.stderr[-300:]}")
expect(f"B_crit (fit) = {fit['B_crit']:.4g} [{lo:.4g}, {hi:.4g}]" in one.stdout,
       "B_crit as fit.json has it")
best = [line.split(",")[0] for line in (sweep / "best.csv").read_text().splitlines()[1:]]
rows = [line for line in one.stdout.splitlines() if line.startswith("| ") and "seeds" not in line]
expect(len(rows) == len(best), f"a row per batch size of best.csv ({len(rows)} of {len(best)})")
two = run(str(sweep), str(sweep))
expect(two.returncode == 0 and "change +0.0%" in two.stdout, "the same sweep twice: no change")
bad = run(not_a_sweep)
lines = bad.stderr.strip().splitlines()
expect(bad.returncode == 2, f"not a sweep: exit {bad.returncode}")
expect(len(lines) == 1 and lines[0].startswith("error: ") and "has no sweep.csv" in lines[0],
       f"not a sweep: one error line: {bad.stderr[-300:]}")
expect(run().returncode == 2, "no directory: the usage, exit 2")
sys.exit(1 if failures else 0)
