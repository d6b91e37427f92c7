"""Steps-to-target per batch size under each reading a sweep recorded, as a table.

    /usr/bin/python3 notebooks/lbt_target_readings.py SWEEP_DIR [SWEEP_DIR ...]

For each sweep: per batch size, the median over the best (B, LR)'s seeds of steps_hi and the
range of the seeds that met it, for the sweep's own reading (steps_hi) and for each reading sweep.csv records
(ema_steps_hi, first_passage_steps_hi); then B_crit with its 95% interval from fit.json (and
its sensitivity's, per reading). With two sweeps, B_crit's relative change between them.
The median is the fit's (best.csv's steps_median): a seed that did not meet a reading counts
as above its last step (diverged: above any), one that failed or timed out is not counted;
where that leaves the median unknown the table gives its lower bound, ">= N (median unknown)"
(it took the median of only the seeds that met the reading, biased low).
Reads only sweep.csv, best.csv and fit.json (a sweep.csv from before its `best` column: the
best trial of each batch size, from best.csv). A directory that is not a sweep's is one error
line and exit status 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


class NotASweep(Exception):
    pass


def best_trials(sweep: Path) -> pd.DataFrame:
    """sweep.csv's rows of each batch size's best (B, LR), its seeds included."""
    df = pd.read_csv(sweep / "sweep.csv")
    if "best" in df:
        return df[df["best"].astype(str).isin(["True", "true"])]
    best = pd.read_csv(sweep / "best.csv")  # older sweeps: one best trial per batch size
    return df[df["trial"].isin(best["trial"])]


def steps_table(sweep: Path) -> pd.DataFrame:
    df = best_trials(sweep)
    rows = []
    own = "steps_hi" if "steps_hi" in df else "steps_to_target"  # older sweeps: no bracket
    columns = [own] + [c for c in ("ema_steps_hi", "first_passage_steps_hi") if c in df]
    for b, g in df.groupby("batch_size"):
        row = {"B": int(b), "seeds": len(g)}
        for c in columns:
            row[c] = reading_text(g, c)
        rows.append(row)
    return pd.DataFrame(rows)


UNMEASURED = ("failed", "timeout")  # measured nothing: not counted, as in the fit


def censored_median(g: pd.DataFrame, column: str) -> tuple[float, float]:
    """(median, lower bound) of a batch size's seeds under `column`, by the fit's rule
    (analysis/measured_fit.cpp): a seed that met it is at its step; one that did not is above
    its last step (`steps`), a diverged one above any. The median is known (median == lower
    bound) where the seeds short of it cannot move it; else median is NaN."""
    g = g[~g["status"].isin(UNMEASURED)]
    met = g[column].notna()
    run = g["steps"].where(g["status"] != "diverged", float("inf"))
    above = g[column].where(met, float("inf"))
    at_least = g[column].where(met, run)
    if not len(g):
        return float("nan"), float("nan")
    median, bound = above.median(), at_least.median()
    return (median if median == bound else float("nan")), bound


def reading_text(g: pd.DataFrame, column: str) -> str:
    """'median [min, max]' over the seeds that met the reading, with how many met it where not
    all did; '>= N (median unknown)' where the seeds short of it leave the median unknown."""
    median, bound = censored_median(g, column)
    v = g[column].dropna()
    met = f" ({len(v)} met)" if len(v) < len(g) else ""
    if median == median:
        return f"{median:.0f} [{v.min():.0f}, {v.max():.0f}]{met}"
    if bound == bound and bound != float("inf"):
        return f">= {bound:.0f} (median unknown){met}"
    return "-" + met


def markdown(df: pd.DataFrame) -> str:
    cells = [list(map(str, df.columns))] + [list(map(str, r)) for r in df.itertuples(index=False)]
    lines = ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join([lines[0], "|" + "---|" * len(df.columns)] + lines[1:])


def b_crit(sweep: Path) -> dict[str, tuple[float, float, float]]:
    fit = json.loads((sweep / "fit.json").read_text())
    out = {"fit": (fit["B_crit"], *(fit.get("intervals", {}).get("B_crit") or (None, None)))}
    sens = fit.get("sensitivity") or {}
    for name, r in (sens.get("readings") or {}).items():
        if r.get("fitted"):
            out[name] = (r["B_crit"], *(r["intervals"]["B_crit"] or (None, None)))
    if sens.get("warning"):
        print(f"warning: {sens['warning']}")
    return out


def text(v) -> str:
    return "not resolved" if v is None else f"{v:.4g}"


def check_sweep(d: Path) -> None:
    for name in ("sweep.csv", "best.csv", "fit.json"):
        if not (d / name).is_file():
            raise NotASweep(f"{d} has no {name}: give a directory lbt sweep wrote (lbt fit DIR "
                            "writes fit.json)")


def main(dirs: list[str]) -> int:
    if not dirs:
        print("usage: lbt_target_readings.py SWEEP_DIR [SWEEP_DIR ...]", file=sys.stderr)
        return 2
    try:
        for d in map(Path, dirs):
            check_sweep(d)
    except NotASweep as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    crits = []
    for d in map(Path, dirs):
        fit = json.loads((d / "fit.json").read_text())
        print(f"## {d}  (target_definition: {fit.get('target_definition')})\n")
        print(markdown(steps_table(d)))
        c = b_crit(d)
        crits.append(c)
        for name, (v, lo, hi) in c.items():
            print(f"B_crit ({name}) = {text(v)} [{text(lo)}, {text(hi)}]")
        print()
    if len(crits) == 2:
        for name in crits[0]:
            if name in crits[1]:
                a, b = crits[0][name][0], crits[1][name][0]
                change = "" if a is None or b is None else f", change {100 * (b - a) / a:+.1f}%"
                print(f"B_crit ({name}): {text(a)} -> {text(b)}{change}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
