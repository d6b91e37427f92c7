"""lbt.fit_critical_batch recovers B_crit from S = S_min (1 + B_crit / B) (McCandlish et al.
2018, eq. 2.11), and lbt.fit_sweep returns what `lbt fit` writes; run directories load as
pandas DataFrames."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

import lbt

LBT = os.environ.get("LBT_EXECUTABLE", "build/cli/lbt")
SOURCE = Path(os.environ.get("LBT_SOURCE_DIR", "."))
SWEEP = SOURCE / "tests/notebooks/data/sweep"  # a real `lbt sweep`, committed
S_MIN, B_CRIT = 120.0, 900.0
BATCHES = np.array([16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192], dtype=float)


def steps_at(batch_sizes):
    return S_MIN * (1.0 + B_CRIT / batch_sizes)


class FitCriticalBatchTest(unittest.TestCase):
    def test_exact_curve_recovers_parameters(self):
        fit = lbt.fit_critical_batch(BATCHES, steps_at(BATCHES), resamples=200)
        self.assertAlmostEqual(fit["B_crit"], B_CRIT, delta=1e-6 * B_CRIT)
        self.assertAlmostEqual(fit["S_min"], S_MIN, delta=1e-6 * S_MIN)
        self.assertAlmostEqual(fit["E_min"], S_MIN * B_CRIT, delta=1e-6 * S_MIN * B_CRIT)
        lo, hi = fit["intervals"]["B_crit"]
        self.assertLessEqual(lo, B_CRIT * (1 + 1e-6))
        self.assertGreaterEqual(hi, B_CRIT * (1 - 1e-6))

    def test_noisy_curve_recovers_b_crit_within_its_interval(self):
        rng = np.random.default_rng(0)
        steps = steps_at(BATCHES) * np.exp(rng.normal(0.0, 0.05, size=len(BATCHES)))
        fit = lbt.fit_critical_batch(list(BATCHES), list(steps), seed=1)  # plain lists work too
        self.assertLess(abs(fit["B_crit"] / B_CRIT - 1), 0.15)
        for name in ("S_min", "E_min", "B_crit"):
            lo, hi = fit["intervals"][name]
            self.assertTrue(lo <= fit[name] <= hi, (name, lo, fit[name], hi))
        lo, hi = fit["intervals"]["B_crit"]
        self.assertTrue(lo < B_CRIT < hi, (lo, hi))
        self.assertEqual((fit["interval"], fit["resamples"]), ("profile", None))
        boot = lbt.fit_critical_batch(BATCHES, steps, interval="bootstrap", seed=1)
        self.assertEqual((boot["interval"], boot["resamples"]), ("bootstrap", 2000))
        with self.assertRaises(ValueError) as ctx:
            lbt.fit_critical_batch(BATCHES, steps, interval="jackknife")
        self.assertIn('interval must be "profile" or "bootstrap"', str(ctx.exception))

    def test_bad_input_is_one_line_value_error(self):
        cases = [([-16, 32, 64], [10, 5, 3], "positive"), ([16, 32], [10, 5, 3], "same length"),
                 ([16, 32, 64], [10, float("nan"), 3], "positive and finite"),
                 ([16, 16, 16], [10, 10, 10], "3 batch sizes")]
        for batch_sizes, steps, needle in cases:
            with self.assertRaises(ValueError) as ctx:
                lbt.fit_critical_batch(batch_sizes, steps)
            self.assertIn(needle, str(ctx.exception))
            self.assertNotIn("\n", str(ctx.exception))

    def test_steps_that_rise_with_the_batch_resolve_no_critical_batch(self):
        with self.assertWarnsRegex(UserWarning, "no critical batch"):
            fit = lbt.fit_critical_batch([16, 64, 256, 1024], [100, 120, 150, 200], resamples=200)
        self.assertFalse(fit["resolved"])
        for name in ("B_crit", "E_min", "B_noise"):
            self.assertIsNone(fit[name])
            self.assertIsNone(fit["intervals"][name])
        self.assertIn("no critical batch", fit["warning"])
        lo, hi = fit["intervals"]["S_min"]
        self.assertTrue(0 <= lo <= fit["S_min"] <= hi)

    def test_a_bootstrap_that_resolves_nothing_gives_none_not_nan(self):
        # One resample: no percentile interval; it was (nan, nan) where fit_sweep gives None.
        fit = lbt.fit_critical_batch([64, 256, 1024], [100, 50, 30], interval="bootstrap",
                                     resamples=1)
        for name in ("S_min", "E_min", "B_crit", "B_noise"):
            self.assertIsNone(fit["intervals"][name], fit["intervals"])

    def test_every_estimate_lies_inside_its_interval_over_seeded_resamplings(self):
        rng = np.random.default_rng(43)
        for seed in range(40):
            batches = np.array([32.0, 256.0, 2048.0, 16384.0])
            steps = steps_at(batches) * np.exp(rng.normal(0.0, 0.2, size=4))
            # 3 batch sizes: resamples that fit (3 distinct) only reorder them, as in lbt fit.
            three = lbt.fit_critical_batch(batches[:3], steps[:3], interval="bootstrap",
                                           resamples=200, seed=seed)
            self.assertTrue(all(i is None for i in three["intervals"].values()), three)
            for method in ("profile", "bootstrap"):
                fit = lbt.fit_critical_batch(batches, steps, interval=method, resamples=200,
                                             seed=seed)
                for name in ("S_min", "E_min", "B_crit"):
                    if fit[name] is None:
                        continue
                    lo, hi = fit["intervals"][name]
                    hi = float("inf") if hi is None else hi  # open above: B_crit above the sweep
                    self.assertTrue(0 <= lo <= fit[name] <= hi,
                                    (method, seed, name, lo, fit[name], hi))

    def test_steps_that_fall_as_1_over_b_throughout_put_b_crit_above_the_sweep(self):
        batches = np.array([16.0, 64.0, 256.0, 1024.0])
        with self.assertWarnsRegex(UserWarning, "1/B at every batch size"):
            fit = lbt.fit_critical_batch(batches, 102400.0 / batches, resamples=200)
        self.assertFalse(fit["resolved"])
        self.assertTrue(fit["above_sweep"])
        for name in ("B_crit", "B_noise"):  # were 6.3e18 [4.9e16, 3.0e28]
            self.assertIsNone(fit[name])
            self.assertTrue(fit["intervals"][name] is None or fit["intervals"][name][1] is None)
        self.assertAlmostEqual(fit["E_min"], 102400.0, delta=1e-9 * 102400.0)
        self.assertIsNone(fit["S_min"])  # was 8e-24, the optimiser's floor
        self.assertEqual(fit["intervals"]["S_min"][0], 0.0)  # bounded only above
        # Exact curves S = S_min (1 + B_crit / B): a knee at 50x the largest batch is measured,
        # one at 200x is past the sweep's reach (100x).
        knee_50x = lbt.fit_critical_batch(batches, 2.0 * (1 + 51200.0 / batches), resamples=0)
        self.assertAlmostEqual(knee_50x["B_crit"], 51200.0, delta=1e-6 * 51200.0)
        self.assertFalse(knee_50x["above_sweep"])
        with self.assertWarnsRegex(UserWarning, "1/B at every batch size"):
            knee_200x = lbt.fit_critical_batch(batches, 0.5 * (1 + 204800.0 / batches),
                                               resamples=0)
        self.assertIsNone(knee_200x["B_crit"])
        self.assertEqual(knee_50x["b_crit_extrapolated"], "above")  # measured, past the sweep
        below = lbt.fit_critical_batch([8, 32, 128, 512], [20, 19, 18, 18], resamples=0)
        self.assertEqual(below["b_crit_extrapolated"], "below")  # B_crit ~ 0.9 examples
        inside = lbt.fit_critical_batch(batches, 2.0 * (1 + 100.0 / batches), resamples=0)
        self.assertIsNone(inside["b_crit_extrapolated"])

    def test_an_interval_its_replicates_leave_open_above_ends_in_none(self):
        # B_crit ~ 11x the largest batch: resamples without the bend fall as 1/B (B_crit ~ 5e38
        # was its upper end).
        fit = lbt.fit_critical_batch([16, 64, 256, 1024], [6400, 1650, 400, 110],
                                     interval="bootstrap")
        self.assertTrue(fit["resolved"])
        lo, hi = fit["intervals"]["B_crit"]
        self.assertIsNone(hi)
        self.assertTrue(0 < lo <= fit["B_crit"], (lo, fit["B_crit"]))
        self.assertEqual(fit["intervals"]["S_min"][0], 0.0)  # those resamples' S_min is 0


class ImportTest(unittest.TestCase):
    def test_a_refused_cpu_path_raises_import_error_and_leaves_python_running(self):
        # LBT_CPU=avx2x ended the interpreter at import (exit 2 from the library's load), a
        # notebook's kernel with it (2026-11-30 audit).
        code = ("try:\n    import lbt\nexcept ImportError as e:\n    print('ImportError:', e)\n"
                "print('alive')\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "LBT_CPU": "avx2x"}, check=True).stdout
        self.assertIn("ImportError: LBT_CPU=avx2x is not a CPU path", out)
        self.assertIn("alive", out)


class FitSweepTest(unittest.TestCase):
    def test_equals_lbt_fit(self):
        with tempfile.TemporaryDirectory() as tmp:
            ours, theirs = Path(tmp) / "ours", Path(tmp) / "theirs"
            shutil.copytree(SWEEP, ours)
            shutil.copytree(SWEEP, theirs)
            fit = lbt.fit_sweep(ours)
            subprocess.run([LBT, "fit", str(theirs)], check=True, capture_output=True)
            self.assertEqual(fit, json.loads((theirs / "fit.json").read_text()))
            self.assertEqual(fit, json.loads((ours / "fit.json").read_text()))
            self.assertGreater(fit["B_crit"], 0)
            lo, hi = fit["intervals"]["B_crit"]
            self.assertTrue(lo <= fit["B_crit"] <= hi)

    def test_missing_directory(self):
        with self.assertRaises(FileNotFoundError) as ctx:
            lbt.fit_sweep("/no/such/sweep")
        self.assertIn("no sweep directory at /no/such/sweep", str(ctx.exception))
        with self.assertRaises(FileNotFoundError):
            lbt.load_sweep("/no/such/sweep")

    def test_fit_sweep_takes_the_resamples_lbt_fit_takes(self):
        # resamples=0 rewrote fit.json with null intervals; lbt fit refuses fewer than 40.
        with tempfile.TemporaryDirectory() as tmp:
            ours = Path(tmp) / "sweep"
            shutil.copytree(SWEEP, ours)
            before = (ours / "fit.json").read_bytes() if (ours / "fit.json").exists() else None
            for bad in (0, 39):
                with self.assertRaises(ValueError) as ctx:
                    lbt.fit_sweep(ours, resamples=bad)
                self.assertIn("resamples must be in [40, ", str(ctx.exception))
            after = (ours / "fit.json").read_bytes() if (ours / "fit.json").exists() else None
            self.assertEqual(before, after)

    def test_regime_tolerance_must_be_finite_and_positive(self):
        # -1 put every batch size in "maximal_data_parallelism" and wrote it to fit.json.
        for bad in (-1.0, 0.0, float("nan"), float("inf")):
            with self.assertRaises(ValueError) as ctx:
                lbt.fit_sweep(SWEEP, regime_tolerance=bad)
            self.assertIn("regime_tolerance must be finite and > 0", str(ctx.exception))


class RunDirectoriesTest(unittest.TestCase):
    def test_sweep_and_run_as_dataframes(self):
        import pandas as pd
        sweep = lbt.load_sweep(SWEEP)
        self.assertIsInstance(sweep.trials, pd.DataFrame)
        self.assertIn("batch_size", sweep.best)
        run = lbt.load_run(SWEEP / "trials" / sweep.best["trial"].iloc[0])
        self.assertIsInstance(run.eval, pd.DataFrame)
        self.assertIn("step", run.eval)
        self.assertEqual(run.status, "reached_target")

    def test_damaged_log_lines_are_skipped(self):
        # Lines that are not objects, steps that are not numbers and bytes that are not UTF-8
        # raised AttributeError, TypeError and UnicodeDecodeError naming no file.
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "eval.jsonl"
            log.write_bytes(b'{"step": 2, "val_loss": 0.5}\n[1, 2]\n"text"\n{"step": "3"}\n'
                            b'{"step": 1, "val_loss": 0.7}\n\xff\xfe{"step": 4}\n' +
                            b"[" * 100000 + b"]" * 100000 + b"\n")
            frame = lbt.read_jsonl(log)
            self.assertEqual(list(frame["step"]), [1, 2])
            fifo = Path(tmp) / "noise.jsonl"
            os.mkfifo(fifo)
            self.assertTrue(lbt.read_jsonl(fifo).empty)  # read as nothing, not blocked on

    def test_a_damaged_summary_is_one_value_error_naming_it(self):
        # A list loaded (and .status raised AttributeError); bytes that are not UTF-8 raised a
        # bare UnicodeDecodeError; a directory, IsADirectoryError.
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            (run / "eval.jsonl").write_text('{"step": 1}\n')
            summary = run / "summary.json"
            # Nested past Python's stack: a bare RecursionError (2026-11-30 audit).
            deep = b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}"
            for content in (b"[1, 2]\n", b'{"status": "\xff"}\n', deep, None):
                if content is None:
                    summary.unlink()
                    summary.mkdir()
                else:
                    summary.write_bytes(content)
                with self.assertRaises(ValueError) as ctx:
                    lbt.load_run(run)
                self.assertIn(str(summary), str(ctx.exception))
                self.assertNotIn("\n", str(ctx.exception))

    def test_a_damaged_config_is_one_value_error_naming_it(self):
        # tomllib's TOMLDecodeError or UnicodeDecodeError named no file; a FIFO blocked.
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            (run / "summary.json").write_text('{"status": "completed"}\n')
            config = run / "config.toml"
            for content in (b"[train]\nsteps 5\n", b"[train]\nname = '\xff'\n", "fifo", None):
                if config.exists() or config.is_dir():
                    config.rmdir() if config.is_dir() else config.unlink()
                if content is None:
                    config.mkdir()
                elif content == "fifo":
                    os.mkfifo(config)
                else:
                    config.write_bytes(content)
                with self.assertRaises(ValueError) as ctx:
                    lbt.load_run(run)
                self.assertIn(str(config), str(ctx.exception))
                self.assertNotIn("\n", str(ctx.exception))

    def test_noise_keeps_every_estimator_of_a_step(self):
        # noise.jsonl holds a record per estimator and step: keyed on the step alone, load_run
        # kept the last estimator's and dropped the other's without a word.
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            (run / "summary.json").write_text('{"status": "completed"}\n')
            lines = ['{"method": "two_batch+per_example", "reason": "both"}']
            for step in (0, 1):
                for estimator, b in (("two_batch", 10.0 + step), ("per_example", 20.0 + step)):
                    lines.append(json.dumps({"step": step, "estimator": estimator,
                                             "b_simple": b}))
            lines.append(json.dumps({"step": 1, "estimator": "two_batch", "b_simple": 12.0}))
            (run / "noise.jsonl").write_text("\n".join(lines) + "\n")  # a resumed step twice
            noise = lbt.load_run(run).noise
            self.assertEqual(list(zip(noise["step"], noise["estimator"], noise["b_simple"])),
                             [(0, "per_example", 20.0), (0, "two_batch", 10.0),
                              (1, "per_example", 21.0), (1, "two_batch", 12.0)])

    def test_a_sweep_directory_is_not_read_as_an_empty_run(self):
        # load_run of the sweep itself returned a Run with empty tables and no error.
        with self.assertRaises(FileNotFoundError) as ctx:
            lbt.load_run(SWEEP)
        self.assertIn("is not a run directory", str(ctx.exception))
        self.assertIn("lbt.load_sweep reads it", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
