"""Run and sweep directories as pandas DataFrames, through notebooks/lbt_runs.py (the one
module that parses them, which the notebooks and plots also import; reused here, not copied).

    run = lbt.load_run(RUN_DIR)      # .metrics, .eval, .noise: DataFrames; .summary, .config
    sweep = lbt.load_sweep(SWEEP)    # .trials (sweep.csv), .best (best.csv), .fit, .run(trial)
"""
import importlib.util
import os
import sys
from pathlib import Path

from ._source import SOURCE_DIR


def _notebooks_dir() -> Path:
    """$LBT_NOTEBOOKS_DIR, else $LBT_SOURCE_DIR/notebooks, else the tree lbt was built from
    (the same overrides as the notebooks' test and `lbt sweep`'s plots)."""
    if os.environ.get("LBT_NOTEBOOKS_DIR"):
        return Path(os.environ["LBT_NOTEBOOKS_DIR"])
    return Path(os.environ.get("LBT_SOURCE_DIR") or SOURCE_DIR) / "notebooks"


def _import_lbt_runs():
    # A notebook that imports lbt_runs itself gets this same module object (sys.modules).
    if "lbt_runs" in sys.modules:
        return sys.modules["lbt_runs"]
    path = _notebooks_dir() / "lbt_runs.py"
    if not path.exists():
        raise ImportError(f"lbt.runs: no {path}; set LBT_SOURCE_DIR to the lbt source tree")
    spec = importlib.util.spec_from_file_location("lbt_runs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["lbt_runs"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["lbt_runs"]  # no half-imported module for the next try
        raise
    return module


lbt_runs = _import_lbt_runs()
Run, Sweep = lbt_runs.Run, lbt_runs.Sweep
read_jsonl = lbt_runs.read_jsonl


def load_run(path) -> "lbt_runs.Run":
    """A run directory: summary and config dicts, metrics/eval/noise DataFrames."""
    if not Path(path).is_dir():
        raise FileNotFoundError(f"lbt.load_run: no run directory at {path}")
    # A directory with none of a run's files (a sweep's, a typo's parent) is not an empty run.
    if not any((Path(path) / name).exists()
               for name in ("config.toml", "summary.json", "metrics.jsonl", "eval.jsonl")):
        what = " (it holds a sweep: lbt.load_sweep reads it)" \
            if (Path(path) / "sweep.json").exists() else ""
        raise FileNotFoundError(f"lbt.load_run: {path} is not a run directory: no config.toml, "
                                f"summary.json, metrics.jsonl or eval.jsonl{what}")
    return lbt_runs.load_run(path)


def load_sweep(path) -> "lbt_runs.Sweep":
    """A sweep directory: trials (sweep.csv) and best (best.csv) DataFrames, fit.json, runs."""
    if not Path(path).is_dir():
        raise FileNotFoundError(f"lbt.load_sweep: no sweep directory at {path}")
    return lbt_runs.load_sweep(path)
