"""lbt from Python: the gradient noise scale, LR schedules and the critical-batch fit of the
lbt C++ toolkit (the same code as the `lbt` command, bound with pybind11), and run and sweep
directories as pandas DataFrames.

    import lbt
    gn = lbt.GradientNoise(b_small=64, b_big=256)     # McCandlish et al. 2018, App. A.1
    gn.update(g_small_sq, g_big_sq)                    # once per step
    gn.b_simple(), gn.b_simple_ci95()                  # None / (lo, None) while unresolved
    lrs = lbt.schedule("experiments/configs/fmnist_mlp.toml", steps=1000, global_batch=1024)
    fit = lbt.fit_critical_batch([64, 256, 1024], [4000, 1200, 500])
    fit = lbt.fit_sweep("runs/sweep-fmnist_mlp_sweep")  # = lbt fit DIR; writes fit.json
    sweep = lbt.load_sweep("runs/sweep-fmnist_mlp_sweep")  # .trials, .best: DataFrames

Build: the default CMake build writes build/python/lbt; use it with
PYTHONPATH=build/python /usr/bin/python3.
"""
from ._lbt import (Error, GradientNoise, fit_critical_batch, fit_sweep, per_example_estimate,
                   recipes, schedule, two_batch_estimate)

__all__ = ["Error", "GradientNoise", "fit_critical_batch", "fit_sweep", "per_example_estimate",
           "recipes", "schedule", "two_batch_estimate", "load_run", "load_sweep", "read_jsonl",
           "runs"]

# The run-directory readers need pandas (and matplotlib, which notebooks/lbt_runs.py styles):
# loaded on first use, so `import lbt` stays quick and works without them.
_RUN_READERS = ("load_run", "load_sweep", "read_jsonl")


def __getattr__(name):
    if name == "runs" or name in _RUN_READERS:
        # import_module, not `from . import runs`: the latter asks this very __getattr__ for
        # `runs` again while the submodule is not yet bound, and recurses.
        import importlib
        runs = importlib.import_module(".runs", __name__)
        return runs if name == "runs" else getattr(runs, name)
    raise AttributeError(f"module 'lbt' has no attribute {name!r}")
