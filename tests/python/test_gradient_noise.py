"""lbt.GradientNoise against B_simple computed here in numpy from McCandlish et al. 2018
(arXiv:1812.06162): eq. 2.9 B_simple = tr(Sigma)/|G|^2, App. A.1's two-batch unbiased
estimates from E|G_b|^2 = |G|^2 + tr(Sigma)/b, bias-corrected EMAs (averaged) or lines over a
window (now), and Fieller's 95% interval with scipy's exact t quantile."""
import copy
import math
import os
import pickle
import subprocess
import unittest

import numpy as np
from scipy import stats

import lbt

DIM, B_SMALL, SMALL_BATCHES = 50, 16, 4
B_BIG = B_SMALL * SMALL_BATCHES
TRUE_G_SQ, TRUE_TRACE = 1.0, 100.0  # B_simple = 100


def synthetic_steps(steps, seed=0, g_sq=TRUE_G_SQ):
    """Per step: per-example gradients g_n = G + noise, Cov = (TRUE_TRACE / DIM) I; the small
    batches' mean |G_b|^2, the big batch's |G_B|^2 and the per-example gradients."""
    rng = np.random.default_rng(seed)
    G = np.zeros(DIM)
    G[0] = math.sqrt(g_sq)
    for _ in range(steps):
        examples = G + rng.normal(0.0, math.sqrt(TRUE_TRACE / DIM), size=(B_BIG, DIM))
        small = examples.reshape(SMALL_BATCHES, B_SMALL, DIM).mean(axis=1)
        big = examples.mean(axis=0)
        yield float((small ** 2).sum(axis=1).mean()), float(big @ big), examples


def two_batch(g_small_sq, g_big_sq, b=B_SMALL, B=B_BIG):
    # E|G_b|^2 = |G|^2 + T/b and E|G_B|^2 = |G|^2 + T/B, solved for |G|^2 and T
    A = np.array([[1.0, 1.0 / b], [1.0, 1.0 / B]])
    return np.linalg.solve(A, [g_small_sq, g_big_sq])


def fieller(T, G, var_T, var_G, cov, dof):
    """{R : (T - R G)^2 <= q^2 Var(T - R G)}; unbounded above when G is not resolved from 0."""
    q2 = stats.t.ppf(0.975, dof) ** 2
    a, b, c = G * G - q2 * var_G, T * G - q2 * cov, T * T - q2 * var_T
    if a <= 0:
        G_hi = G + math.sqrt(q2 * var_G)
        lo = max(0.0, (T - math.sqrt(q2 * var_T)) / G_hi) if G_hi > 0 else 0.0
        return lo, None
    root = math.sqrt(max(0.0, b * b - a * c))
    return max(0.0, (b - root) / a), (b + root) / a


def averaged_reference(estimates, beta):
    """Weights beta^(t - i); reliability-weighted variances; n_eff - 1 degrees of freedom."""
    est = np.asarray(estimates)
    w = beta ** np.arange(len(est) - 1, -1, -1.0)
    G, T = (w @ est) / w.sum()
    n_eff = w.sum() ** 2 / (w ** 2).sum()
    dev = est - [G, T]
    cov = (w[:, None] * dev).T @ dev / (w.sum() - (w ** 2).sum() / w.sum()) / n_eff
    return G, T, fieller(T, G, cov[1, 1], cov[0, 0], cov[0, 1], n_eff - 1)


def now_reference(estimates, window):
    """Least-squares lines through the last `window` estimates, at the newest one."""
    est = np.asarray(estimates[-window:])
    n = len(est)
    u = np.arange(n) - (n - 1) / 2
    fits = [np.polyfit(u, est[:, k], 1) for k in range(2)]
    G, T = (np.polyval(f, u[-1]) for f in fits)
    res = np.stack([est[:, k] - np.polyval(f, u) for k, f in enumerate(fits)], axis=1)
    leverage = 1 / n + u[-1] ** 2 / (u ** 2).sum()
    cov = res.T @ res / (n - 2) * leverage
    return G, T, fieller(T, G, cov[1, 1], cov[0, 0], cov[0, 1], n - 2)


class GradientNoiseTest(unittest.TestCase):
    def feed(self, steps, **kwargs):
        gn = lbt.GradientNoise(B_SMALL, B_BIG, **kwargs)
        estimates = []
        for g_small_sq, g_big_sq, _ in steps:
            step = gn.update(g_small_sq, g_big_sq)
            expected = two_batch(g_small_sq, g_big_sq)
            np.testing.assert_allclose(step, expected, rtol=1e-9, atol=1e-9)
            estimates.append(expected)
        return gn, estimates

    def assert_interval(self, got, expected):
        self.assertAlmostEqual(got[0], expected[0], delta=1e-3 * abs(expected[0]) + 1e-9)
        if expected[1] is None:
            self.assertIsNone(got[1])
        else:
            self.assertAlmostEqual(got[1], expected[1], delta=1e-3 * expected[1])

    def test_averaged_matches_numpy(self):
        gn, est = self.feed(synthetic_steps(300), ema=0.95)
        G, T, ci = averaged_reference(est, 0.95)
        s = gn.scale("averaged")
        self.assertAlmostEqual(s["G_sq"], G, delta=1e-9 * abs(G))
        self.assertAlmostEqual(s["trace_sigma"], T, delta=1e-9 * abs(T))
        self.assertAlmostEqual(gn.b_simple(), T / G, delta=1e-9 * T / G)
        self.assert_interval(gn.b_simple_ci95(), ci)
        # and the truth is inside it (seeded: a fixed draw)
        lo, hi = gn.b_simple_ci95()
        self.assertTrue(lo < TRUE_TRACE / TRUE_G_SQ < hi, (lo, hi))

    def test_now_matches_numpy(self):
        gn, est = self.feed(synthetic_steps(120, seed=1), window=25, estimate="now")
        G, T, ci = now_reference(est, 25)
        self.assertAlmostEqual(gn.b_simple(), T / G, delta=1e-9 * T / G)
        self.assertAlmostEqual(gn.b_simple("now"), gn.b_simple())
        self.assert_interval(gn.b_simple_ci95(), ci)
        self.assertEqual(gn.scale()["samples"], 25)

    def test_unresolved_gradient_gives_open_interval(self):
        # |G|^2 of 1e-4 against tr(Sigma) 100 over 20 steps cannot be told from 0
        gn, est = self.feed(synthetic_steps(20, seed=2, g_sq=1e-4))
        lo, hi = gn.b_simple_ci95()
        self.assertIsNone(hi)
        self.assertGreaterEqual(lo, 0.0)
        self.assertIsNone(gn.b_simple())
        self.assert_interval((lo, hi), averaged_reference(est, 0.95)[2])
        self.assertFalse(gn.scale()["resolved"])

    def test_too_few_updates(self):
        gn = lbt.GradientNoise(B_SMALL, B_BIG)
        self.assertEqual(gn.b_simple_ci95(), (None, None))
        self.assertIsNone(gn.b_simple())
        gn.update(2.0, 1.5)
        self.assertEqual(gn.samples, 1)
        self.assertEqual(gn.b_simple_ci95(), (None, None))

    def test_per_example_matches_numpy(self):
        gn = lbt.GradientNoise()
        estimates = []
        for _, _, examples in synthetic_steps(200, seed=3):
            norms = (examples ** 2).sum(axis=1)
            mean = examples.mean(axis=0)
            step = gn.update_per_example(norms, float(mean @ mean))
            # tr(Sigma): the trace of the sample covariance; |G|^2 = |G_n|^2 - tr(Sigma)/n
            trace = np.cov(examples, rowvar=False).trace()
            expected = (mean @ mean - trace / len(examples), trace)
            np.testing.assert_allclose(step, expected, rtol=1e-9)
            np.testing.assert_allclose(lbt.per_example_estimate(norms, mean @ mean), expected,
                                       rtol=1e-9)
            estimates.append(expected)
        G, T, ci = averaged_reference(estimates, 0.95)
        self.assertAlmostEqual(gn.b_simple(), T / G, delta=1e-9 * T / G)
        self.assert_interval(gn.b_simple_ci95(), ci)

    def test_equals_the_cpp_tracker_run_alone(self):
        steps = [(s, B) for s, B, _ in synthetic_steps(80, seed=4)]
        text = "".join(f"{B_SMALL} {B_BIG} {s!r} {B!r}\n" for s, B in steps)  # repr round-trips
        out = subprocess.run([os.environ.get("LBT_NOISE_TRACKER_CLI", "noise_tracker_cli"),
                              "0.9", "12"], input=text, capture_output=True, text=True,
                             check=True).stdout
        gn = lbt.GradientNoise(B_SMALL, B_BIG, ema=0.9, window=12)
        for s, B in steps:
            gn.update(s, B)
        for line in out.splitlines():
            kind, *values = line.split()
            G, T, b_simple, lo, hi = map(float, values)
            scale = gn.scale(kind)
            # the module reports C++'s NaN (no value) and +inf (unbounded) as None
            self.assertEqual((scale["G_sq"], scale["trace_sigma"], scale["b_simple"]),
                             (G, T, None if math.isnan(b_simple) else b_simple))
            self.assertEqual(gn.b_simple_ci95(kind),
                             (None if math.isnan(lo) else lo, None if math.isinf(hi) else hi))

    def test_bad_input_is_one_line_value_error(self):
        for args, kwargs, needle in [((-4, 16), {}, "0 < b_small < b_big"),
                                     ((16, 16), {}, "0 < b_small < b_big"),
                                     ((16,), {}, "both b_small and b_big"),
                                     ((16, 64), {"estimate": "latest"}, "estimate must be"),
                                     ((16, 64), {"ema": 1.0}, "ema must be"),
                                     ((16, 64), {"window": 2}, "window must be"),
                                     ((True, 256), {}, "b_small is a batch size")]:
            with self.assertRaises(ValueError) as ctx:
                lbt.GradientNoise(*args, **kwargs)
            self.assertIn(needle, str(ctx.exception))
            self.assertNotIn("\n", str(ctx.exception))
        with self.assertRaisesRegex(ValueError, "without b_small"):
            lbt.GradientNoise().update(1.0, 0.5)
        with self.assertRaisesRegex(ValueError, "finite"):
            lbt.GradientNoise(16, 64).update(float("nan"), 0.5)
        with self.assertRaisesRegex(ValueError, "at least 2"):
            lbt.per_example_estimate([1.0], 1.0)


class CarelessInputTest(unittest.TestCase):
    """Inputs no gradient can produce are refused; a positive quantity is never
    reported with a negative value or bound; an impossible window is refused, not allocated."""

    def test_negative_squared_norms_are_refused_everywhere(self):
        gn = lbt.GradientNoise(16, 64)
        for call in (lambda: gn.update(-1e6, -1e6), lambda: gn.update(1.0, -0.5),
                     lambda: lbt.GradientNoise().update_per_example([1.0, 2.0], -1.0),
                     lambda: lbt.two_batch_estimate(16, -1.0, 64, 1.0),
                     lambda: lbt.per_example_estimate([1.0, 2.0], -3.0)):
            with self.assertRaises(ValueError) as ctx:
                call()
            self.assertIn("squared norm", str(ctx.exception))
            self.assertNotIn("\n", str(ctx.exception))
        self.assertEqual(gn.samples, 0)

    def test_a_batch_norm_above_its_examples_mean_is_refused(self):
        # |mean g_n|^2 <= mean |g_n|^2: norms [1, 1] with |G_n|^2 = 5 gave tr(Sigma) = -8.
        gn = lbt.GradientNoise()
        for call in (lambda: lbt.per_example_estimate([1.0, 1.0], 5.0),
                     lambda: gn.update_per_example([1.0, 1.0], 5.0)):
            with self.assertRaises(ValueError) as ctx:
                call()
            self.assertIn("exceeds the mean per-example squared norm", str(ctx.exception))
            self.assertNotIn("\n", str(ctx.exception))
        self.assertEqual(gn.samples, 0)
        # Identical examples: |G_n|^2 equals their mean up to round-off, tr(Sigma) ~ 0.
        g_sq, trace = lbt.per_example_estimate([2.0, 2.0, 2.0], 2.0 * (1 + 1e-9))
        self.assertAlmostEqual(trace, 0.0, delta=1e-8)

    def test_small_batches_shorter_than_the_big_one_give_no_negative_b_simple(self):
        # |G_b|^2 = 1 < |G_B|^2 = 2: tr(Sigma) = (1 - 2) / (1/16 - 1/64) < 0, so B_simple
        # = tr(Sigma) / |G|^2 would be negative; it is unresolved instead.
        gn = lbt.GradientNoise(16, 64)
        for _ in range(5):
            gn.update(1.0, 2.0)
        self.assertLess(gn.scale()["trace_sigma"], 0.0)
        for kind in ("averaged", "now"):
            self.assertIsNone(gn.b_simple(kind))
            self.assertFalse(gn.scale(kind)["resolved"])
            for bound in gn.b_simple_ci95(kind):
                self.assertTrue(bound is None or bound >= 0.0, gn.b_simple_ci95(kind))

    def test_an_infinite_batch_or_overflowing_norms_are_refused_naming_the_call(self):
        with self.assertRaises(ValueError) as ctx:  # it returned (nan, 0.0)
            lbt.two_batch_estimate(64, 1.0, float("inf"), 1.0)
        self.assertIn("need 0 < b_small < b_big", str(ctx.exception))
        gn = lbt.GradientNoise(64, 256)
        with self.assertRaises(ValueError) as ctx:  # it named add_estimate and "G_sq ... -nan"
            gn.update(1e308, 1e308)
        self.assertIn("GradientNoise.update: the squared norms overflow double", str(ctx.exception))
        self.assertEqual(gn.samples, 0)
        # The one-step estimates alike: they returned (nan, 0.0), (inf, 0.0) and (-inf, inf).
        for name, call in (("two_batch_estimate", lambda: lbt.two_batch_estimate(64, 1e307, 256,
                                                                                 1e307)),
                           ("two_batch_estimate", lambda: lbt.two_batch_estimate(64, 1e306, 256,
                                                                                 1e306)),
                           ("per_example_estimate",
                            lambda: lbt.per_example_estimate([1e308, 1e308], 1e308))):
            with self.assertRaises(ValueError) as ctx:
                call()
            self.assertIn(name + ": the squared norms overflow double", str(ctx.exception))

    def test_a_pickled_or_copied_tracker_continues_exactly(self):
        # A training loop that checkpoints and resumes kept no EMA: the object could not be
        # pickled. Its copy now continues bit for bit, and a damaged state is refused.
        rng = np.random.default_rng(7)
        gn = lbt.GradientNoise(32, 128, ema=0.9, window=7, estimate="now")
        draws = rng.uniform(1.0, 3.0, size=(40, 2))
        for small, big in draws[:25]:
            gn.update(small + big, big)
        for clone in (pickle.loads(pickle.dumps(gn)), copy.deepcopy(gn)):
            original = copy.deepcopy(gn)
            for small, big in draws[25:]:
                original.update(small + big, big)
                clone.update(small + big, big)
            for kind in ("averaged", "now"):
                self.assertEqual(clone.scale(kind), original.scale(kind))
            self.assertEqual((clone.b_small, clone.b_big, clone.estimate), (32, 128, "now"))
        state = list(gn.__getstate__())
        state[5] = state[5][:-1]
        with self.assertRaises(ValueError) as ctx:
            lbt.GradientNoise.__new__(lbt.GradientNoise).__setstate__(tuple(state))
        self.assertIn("running sums are damaged", str(ctx.exception))

    def test_an_object_whose_init_never_ran_raises_instead_of_crashing(self):
        # add_estimate on GradientNoise.__new__(...) died of SIGFPE (unconstructed memory).
        bare = lbt.GradientNoise.__new__(lbt.GradientNoise)
        for call in (lambda: bare.add_estimate(1.0, 2.0), lambda: bare.update(2.0, 1.0),
                     bare.b_simple, bare.scale, bare.reset, lambda: bare.samples,
                     lambda: repr(bare)):
            with self.assertRaises(TypeError) as ctx:
                call()
            self.assertIn("GradientNoise.__init__ has not run", str(ctx.exception))

        class Early(lbt.GradientNoise):
            def __init__(self):
                self.add_estimate(1.0, 2.0)
                super().__init__()

        with self.assertRaises(TypeError):
            Early()

    def test_an_impossible_window_is_refused_before_allocating(self):
        with self.assertRaises(ValueError) as ctx:
            lbt.GradientNoise(16, 64, window=10 ** 9)  # 16 GB of ring buffer
        self.assertIn("window must be in [3, 1000000]", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
