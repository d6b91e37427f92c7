"""Load lbt run and sweep directories; the one parsing module every notebook and plot imports.

A run directory holds config.toml, metrics.jsonl, eval.jsonl, noise.jsonl and summary.json;
a sweep directory holds trials/<B>_<k>/ runs plus sweep.csv, best.csv, sweep.json and fit.json.
JSONL logs are deduplicated keeping the *last* record per step, because a restarted job
re-logs steps it had already logged (as llm.c's dev/vislog.ipynb does).
"""
from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# No matplotlib.use() here: a notebook importing this keeps its inline backend (the scripts
# choose Agg when run as scripts; headless, matplotlib falls back to Agg by itself).
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

# ---- shared plot style ----
COLORS = {"data": "#1f77b4", "fit": "#d62728", "perfect": "#7f7f7f", "linear": "#2ca02c",
          "sqrt": "#ff7f0e", "failed": "#9467bd"}
STATUS_MARKERS = {"reached_target": "o", "budget_exhausted": "x", "diverged": "v", "failed": "s",
                  "pruned": "|", "timeout": "d"}


def style() -> None:
    """The lbt plot style: readable on a slide and in a notebook."""
    plt.rcParams.update({
        "figure.figsize": (6.4, 4.4), "figure.dpi": 110, "savefig.dpi": 130,
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
        "axes.spines.right": False, "font.size": 10, "legend.frameon": False,
    })


def data_dir(env_var: str, default: str | os.PathLike) -> Path:
    """The directory a notebook reads: $env_var when set, else `default`."""
    return Path(os.environ.get(env_var, default))


# ---- run directories ----
def read_jsonl(path: str | os.PathLike, key: str | tuple[str, ...] = "step") -> pd.DataFrame:
    """Records of a JSONL log, last record per `key` kept, sorted by `key`. `key` may be several
    fields: noise.jsonl holds a record per (estimator, step), and keyed on the step alone it kept
    one estimator's. A torn or non-JSON line (a killed writer), one that is not an object, or one
    whose last `key` field (the step) is not a number is skipped, as is one without it where
    `key` names several fields (noise.jsonl's method line); a missing file, or one that is not a
    regular file (a FIFO would block the reader), gives an empty frame."""
    path = Path(path)
    if not path.is_file():
        return pd.DataFrame()
    fields = (key,) if isinstance(key, str) else tuple(key)
    by_key: dict = {}
    order = 0
    with path.open(errors="replace") as f:  # bytes that are not UTF-8: a line that is skipped
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):  # nested past Python's stack
                continue
            if not isinstance(rec, dict) or (len(fields) > 1 and fields[-1] not in rec):
                continue
            k = rec.get(fields[-1], order)
            if isinstance(k, bool) or not isinstance(k, (int, float)):
                continue
            order += 1
            by_key[tuple(str(rec.get(f)) for f in fields[:-1]) + (k,)] = rec  # later records win
    if not by_key:
        return pd.DataFrame()
    frame = pd.DataFrame(list(by_key.values()))
    present = [f for f in reversed(fields) if f in frame]  # the step first, then the others
    return frame.sort_values(present, ignore_index=True, kind="stable") if present else frame


def read_json(path: str | os.PathLike) -> dict | None:
    """A JSON object lbt wrote (atomically), or None where there is none. One that does not
    parse, is not UTF-8, is not an object, or is not a regular file was cut short, edited or
    replaced: ValueError naming it, not the parser's message alone (a summary.json holding a
    list loaded, and .status raised AttributeError)."""
    path = Path(path)
    if not path.exists():
        return None
    why = None
    if not path.is_file():
        why = "is not a regular file"
    else:
        try:
            with path.open(encoding="utf-8") as f:
                data = json.load(f)
            if isinstance(data, dict):
                return data
            why = f"holds a JSON {type(data).__name__}, not the object lbt writes"
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            why = f"does not parse as JSON ({e})"
        except RecursionError:  # a RecursionError escaped load_run (2026-11-30 audit)
            why = "nests deeper than Python's parser reads"
    fix = "lbt fit SWEEP_DIR rewrites fit.json" if path.name == "fit.json" else \
        "rerun the lbt command that wrote it"
    raise ValueError(f"{path} {why}: the file was cut short, edited or replaced; {fix}")


def read_csv(path: str | os.PathLike) -> pd.DataFrame:
    """sweep.csv or best.csv. lbt ends every line with a newline: a file that does not end in
    one was cut short (pandas would read its torn last row as if whole): ValueError."""
    path = Path(path)
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        last = f.read(1)
    if size == 0 or last != b"\n":
        raise ValueError(f"{path} ends without a newline: the file was cut short; rebuild it "
                         "with lbt sweep --config CONFIG --out SWEEP_DIR --collect")
    return pd.read_csv(path)


@dataclass
class Run:
    path: Path
    summary: dict
    config: dict
    metrics: pd.DataFrame
    eval: pd.DataFrame
    noise: pd.DataFrame

    @property
    def status(self) -> str:
        return self.summary.get("status", "missing")


def read_toml(path: str | os.PathLike) -> dict:
    """A run's config.toml (lbt writes it whole), {} where there is none. One that is not a
    regular file (a FIFO would block the reader), not UTF-8 or not TOML was cut short, edited or
    replaced: ValueError naming it (tomllib's message named no file, 2026-11-30 audit)."""
    path = Path(path)
    if not path.exists():
        return {}
    why = "is not a regular file"
    if path.is_file():
        try:
            with path.open("rb") as f:
                return tomllib.load(f)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            why = f"does not parse as TOML ({e})"
    raise ValueError(f"{path} {why}: the file was cut short, edited or replaced; rerun the lbt "
                     "command that wrote it")


def load_run(path: str | os.PathLike) -> Run:
    path = Path(path)
    return Run(path=path, summary=read_json(path / "summary.json") or {},
               config=read_toml(path / "config.toml"),
               metrics=read_jsonl(path / "metrics.jsonl"), eval=read_jsonl(path / "eval.jsonl"),
               noise=read_jsonl(path / "noise.jsonl", key=("estimator", "step")))


# ---- sweep directories ----
@dataclass
class Sweep:
    path: Path
    trials: pd.DataFrame          # sweep.csv: one row per trial
    best: pd.DataFrame            # best.csv: per batch size, the fewest steps to target
    fit: dict | None              # fit.json (None before `lbt fit` could run)
    manifest: dict = field(default_factory=dict)  # sweep.json: the plan

    @property
    def reached(self) -> pd.DataFrame:
        """best.csv rows whose best trial reached the target, sorted by batch size."""
        b = self.best[self.best["status"] == "reached_target"]
        return b.sort_values("batch_size", ignore_index=True)

    def run(self, trial: str) -> Run:
        return load_run(self.path / "trials" / trial)


def load_sweep(path: str | os.PathLike) -> Sweep:
    path = Path(path)
    if not (path / "sweep.csv").exists():
        raise FileNotFoundError(f"{path} has no sweep.csv: is it a directory written by lbt sweep?")
    return Sweep(path=path, trials=read_csv(path / "sweep.csv"),
                 best=read_csv(path / "best.csv"), fit=read_json(path / "fit.json"),
                 manifest=read_json(path / "sweep.json") or {})


def fitted_steps(fit: dict, batch_sizes) -> np.ndarray:
    """S(B) = S_min (1 + B_crit / B) = S_min + E_min / B with the fitted parameters: E_min's form
    holds also where B_crit and S_min are null above the sweep (S_min bounded only above, ~0;
    B_crit past 100x its batches)."""
    b = np.asarray(batch_sizes, dtype=float)
    return (fit["S_min"] or 0.0) + fit["E_min"] / b


def best_steps(best: pd.DataFrame) -> pd.Series:
    """Steps to target per batch size: the median over seeds (best.csv's steps_median), or the
    best trial's steps where the sweep predates seeds."""
    if "steps_median" in best:
        return best["steps_median"].astype(float).reset_index(drop=True).set_axis(best.index)
    return best["steps_to_target"].astype(float)


def noise_b_simple(sweep: Sweep) -> pd.DataFrame:
    """Per trial with a noise.jsonl and per estimator: batch size and median b_simple over the
    steps (the last record per estimator and step)."""
    rows = []
    for _, t in sweep.trials.iterrows():
        df = read_jsonl(sweep.path / "trials" / t["trial"] / "noise.jsonl",
                        key=("estimator", "step"))
        if "b_simple" not in df or "estimator" not in df:
            continue
        for estimator, part in df.groupby("estimator", sort=True):
            v = part["b_simple"].replace([np.inf, -np.inf], np.nan).dropna()
            if len(v):
                rows.append({"trial": t["trial"], "batch_size": t["batch_size"],
                             "estimator": estimator, "median_b_simple": float(v.median())})
    return pd.DataFrame(rows)


def fmt(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"
