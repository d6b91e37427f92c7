"""lbt.schedule against the `lbt schedule` executable: the same LRs, bit for bit (the CLI
prints the shortest round-trip form, so float() of its text is the very double)."""
import csv
import io
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

import lbt

LBT = os.environ.get("LBT_EXECUTABLE", "build/cli/lbt")
SOURCE = Path(os.environ.get("LBT_SOURCE_DIR", "."))
PRESET = SOURCE / "experiments/configs/fmnist_mlp.toml"


def cli_schedule(config, *args):
    """The `lr` column `lbt schedule --config CONFIG ARGS` prints."""
    out = subprocess.run([LBT, "schedule", "--config", str(config), *args], check=True,
                         capture_output=True, text=True).stdout
    return np.array([float(row["lr"]) for row in csv.DictReader(io.StringIO(out))])


class ScheduleTest(unittest.TestCase):
    def assert_same(self, got, expected):
        self.assertEqual(len(got), len(expected))
        np.testing.assert_array_equal(got, expected)

    def test_preset_scaled_batch_matches_cli(self):
        # Goyal's recipe from batch 128 to 1024: warmup from the unscaled LR, x0.1 at epochs 8, 12
        got = lbt.schedule(PRESET, steps=700, global_batch=1024, steps_per_epoch=50)
        self.assert_same(got, cli_schedule(PRESET, "-b", "1024", "--steps", "700",
                                           "--steps-per-epoch", "50"))
        self.assertAlmostEqual(got[0], 0.05)          # warmup starts at optimizer.lr
        self.assertAlmostEqual(got[50], 0.05 * 8)     # peak after one epoch: linear scaling
        self.assertAlmostEqual(got[-1], 0.05 * 8 * 0.01)

    def test_preset_with_its_data_matches_cli(self):
        # steps per epoch and the run's length from Fashion-MNIST, as the trainer counts them
        got = lbt.schedule(str(PRESET))
        self.assert_same(got, cli_schedule(PRESET))

    def test_recipe_matches_cli_on_a_config_naming_it(self):
        sets = ["optimizer.lr=0.1", "train.global_batch=256"]
        got = lbt.schedule("cosine", steps=400, global_batch=4096, sets=sets, train_size=60000)
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "cosine.toml"
            config.write_text('[schedule]\nrecipe = "cosine"\n')
            expected = cli_schedule(config, *[a for s in sets for a in ("--set", s)], "-b", "4096",
                                    "--steps", "400", "--train-size", "60000")
        self.assert_same(got, expected)
        self.assertEqual(set(lbt.recipes()), {"goyal", "lars", "legw", "cosine", "wsd"})

    def cli_on_recipe(self, recipe, sets, *args):
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "recipe.toml"
            config.write_text(f'[schedule]\nrecipe = "{recipe}"\n')
            return cli_schedule(config, *[a for s in sets for a in ("--set", s)], *args)

    def test_a_recipe_s_batch_set_keeps_the_lr_s_reference_batch(self):
        # The batch set alone: the LR stays tuned at the defaults' 128 and the rule scales it,
        # as lbt schedule does (the reference had followed the set batch: 0.1 at 8192, not 6.4).
        sets = ["optimizer.lr=0.1", "train.global_batch=8192"]
        got = lbt.schedule("goyal", steps=400, sets=sets, train_size=60000)
        self.assert_same(got, self.cli_on_recipe("goyal", sets, "--steps", "400",
                                                 "--train-size", "60000"))
        self.assertAlmostEqual(got.max(), 0.1 * 8192 / 128)

    def test_a_warmup_past_the_run_is_shown_with_a_warning_as_the_cli_shows_it(self):
        # It raised lbt.Error where lbt schedule prints the LRs with a warning.
        sets = ["schedule.warmup=5", "schedule.warmup_unit=\"epochs\""]
        args = ("-b", "1024", "--steps", "10", "--train-size", "60000")
        with self.assertWarnsRegex(UserWarning, "warmup"):
            got = lbt.schedule(PRESET, steps=10, global_batch=1024, sets=sets, train_size=60000)
        self.assert_same(got, cli_schedule(PRESET, *[a for s in sets for a in ("--set", s)],
                                           *args))

    def test_a_global_batch_over_workers_is_checked_not_the_config_s(self):
        # 1026 over 3 workers: the config's own 128 does not divide by 3, and was blamed.
        got = lbt.schedule(PRESET, steps=50, global_batch=1026, workers=3, steps_per_epoch=20)
        self.assert_same(got, cli_schedule(PRESET, "-b", "1026", "--workers", "3", "--steps",
                                           "50", "--steps-per-epoch", "20"))

    def test_bad_input_is_one_line_error(self):
        with self.assertRaisesRegex(ValueError, "neither a config file nor a recipe"):
            lbt.schedule("no/such/config.toml", steps=10)
        with self.assertRaisesRegex(ValueError, "global_batch must be positive"):
            lbt.schedule(PRESET, steps=10, global_batch=-128)
        with self.assertRaises(lbt.Error) as ctx:  # the config schema's own error, with its hint
            lbt.schedule(PRESET, steps=10, sets=["schedule.decay=cosinus"])
        self.assertIn("schedule.decay", str(ctx.exception))
        self.assertNotIn("\n", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
