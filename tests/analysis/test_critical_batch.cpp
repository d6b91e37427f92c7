// The critical-batch fit (analysis/critical_batch.hpp) against data made from the formula
// S = S_min (1 + B_noise / B) with multiplicative noise.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>

#include "analysis/critical_batch.hpp"
#include "analysis/plan.hpp"
#include "core/error.hpp"

using namespace lbt::analysis;

namespace {

std::vector<ScalingPoint> formula_points(double S_min, double B_noise, double sigma,
                                         unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> eps(0.0, sigma);
  std::vector<ScalingPoint> pts;
  for (double B = 16; B <= 65536; B *= 2)
    pts.push_back({B, S_min * (1 + B_noise / B) * std::exp(eps(rng))});
  return pts;
}

bool within(double got, double want, double rtol) {
  return std::abs(got - want) <= rtol * std::abs(want);
}

}  // namespace

BOOST_AUTO_TEST_CASE(fit_recovers_exact_parameters_from_noiseless_points) {
  const auto f = fit_critical_batch(formula_points(150.0, 2000.0, 0.0, 1));
  BOOST_CHECK_MESSAGE(within(f.S_min, 150.0, 1e-6), "S_min " << f.S_min);
  BOOST_CHECK_MESSAGE(within(f.B_noise, 2000.0, 1e-6), "B_noise " << f.B_noise);
  BOOST_CHECK_MESSAGE(within(f.E_min, 150.0 * 2000.0, 1e-6), "E_min " << f.E_min);
  BOOST_CHECK_MESSAGE(within(f.B_crit, f.E_min / f.S_min, 1e-12), "B_crit " << f.B_crit);
  BOOST_TEST(f.rms_log_residual < 1e-8);
}

BOOST_AUTO_TEST_CASE(fit_recovers_S_min_and_B_noise_within_5_percent_under_multiplicative_noise) {
  const double S_min = 200.0, B_noise = 1000.0;
  for (unsigned seed : {1u, 2u, 3u}) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      const auto pts = formula_points(S_min, B_noise, 0.03, seed);
      const auto f = fit_critical_batch(pts);
      BOOST_CHECK_MESSAGE(within(f.S_min, S_min, 0.05), "S_min " << f.S_min << " vs " << S_min);
      BOOST_CHECK_MESSAGE(within(f.B_noise, B_noise, 0.05),
                          "B_noise " << f.B_noise << " vs " << B_noise);
      BOOST_CHECK_MESSAGE(within(f.E_min, S_min * B_noise, 0.05), "E_min " << f.E_min);
      // Sensible intervals: they hold the point estimate and are not absurdly wide.
      const auto ci = bootstrap_critical_batch(pts, 1000, 0.95, seed);
      BOOST_TEST(ci.resamples > 900);
      BOOST_TEST(ci.S_min.lo <= f.S_min);
      BOOST_TEST(f.S_min <= ci.S_min.hi);
      BOOST_TEST(ci.B_crit.lo <= f.B_crit);
      BOOST_TEST(f.B_crit <= ci.B_crit.hi);
      BOOST_TEST(ci.S_min.hi / ci.S_min.lo < 1.5);
      BOOST_TEST(ci.B_crit.hi / ci.B_crit.lo < 2.0);
    }
  }
}

// Coverage over many noise draws: a nominal 95% percentile bootstrap over 13 batch sizes
// covers the truth less often than 95% (resampling few points understates the spread), so
// the check is that it holds the truth in most draws, not in every one.
BOOST_AUTO_TEST_CASE(bootstrap_intervals_contain_the_truth_in_most_noise_draws) {
  const double S_min = 200.0, B_noise = 1000.0;
  const int draws = 40;
  int s_hits = 0, b_hits = 0, e_hits = 0;
  for (int seed = 100; seed < 100 + draws; ++seed) {
    const auto ci =
        bootstrap_critical_batch(formula_points(S_min, B_noise, 0.03, seed), 400, 0.95, seed);
    s_hits += ci.S_min.lo <= S_min && S_min <= ci.S_min.hi;
    b_hits += ci.B_crit.lo <= B_noise && B_noise <= ci.B_crit.hi;
    e_hits += ci.E_min.lo <= S_min * B_noise && S_min * B_noise <= ci.E_min.hi;
  }
  BOOST_TEST_MESSAGE("coverage of 95% intervals over " << draws << " draws: S_min " << s_hits
                                                       << ", B_crit " << b_hits << ", E_min "
                                                       << e_hits);
  BOOST_TEST(s_hits >= 0.8 * draws);
  BOOST_TEST(b_hits >= 0.8 * draws);
  BOOST_TEST(e_hits >= 0.8 * draws);
}

BOOST_AUTO_TEST_CASE(fit_refuses_fewer_than_three_batch_sizes_with_a_hint) {
  std::vector<ScalingPoint> two = {{64, 1000}, {128, 520}, {128, 530}};
  try {
    fit_critical_batch(two);
    BOOST_FAIL("expected lbt::Error");
  } catch (const lbt::Error& e) {
    BOOST_TEST(std::string(e.what()).find("at least 3 batch sizes") != std::string::npos);
    BOOST_TEST(!e.hint().empty());
  }
  BOOST_CHECK_THROW(fit_critical_batch({{64, 1000}, {128, -1}, {256, 300}}), lbt::Error);
}

// Where the least-squares optimum lies on an edge of the model's domain, the fit is that optimum,
// found by hand: the sum of squared log residuals over S = S_min is least at the geometric mean
// of the steps, and over S = E_min / B at the geometric mean of the examples. Before 2026-11-29
// projected Gauss-Newton stopped on the edge unminimised (S_min 3% to 10% off on such sweeps).
BOOST_AUTO_TEST_CASE(an_optimum_on_the_domains_edge_is_the_edges_own_least_squares_fit) {
  // Steps rising with B: no critical batch, S_min = (100 x 130 x 125 x 160)^(1/4).
  const std::vector<ScalingPoint> rising = {{16, 100}, {32, 130}, {64, 125}, {128, 160}};
  const auto flat = fit_critical_batch(rising);
  BOOST_TEST(!flat.resolved);
  BOOST_CHECK_MESSAGE(within(flat.S_min, std::pow(100.0 * 130 * 125 * 160, 0.25), 1e-9),
                      "S_min " << flat.S_min);
  // Steps falling faster than 1/B: above the sweep, E_min = geometric mean of S B.
  const std::vector<ScalingPoint> steep = {{16, 1000}, {32, 450}, {64, 200}, {128, 95}};
  const auto above = fit_critical_batch(steep);
  BOOST_TEST(above.above_sweep);
  const double examples = std::pow(16.0 * 1000 * 32 * 450 * 64 * 200 * 128 * 95, 0.25);
  BOOST_CHECK_MESSAGE(within(above.E_min, examples, 1e-6), "E_min " << above.E_min);
  BOOST_TEST(above.S_min < 1e-9 * 95);
}

// lbt plan's regime call says how sure it is: the share of the bootstrap's fits that put B in
// the same regime. At B = 100 with tolerance 0.2 (perfect scaling up to 0.2 B_crit, maximal
// data parallelism from 5 B_crit): B_crit 1000 puts it in perfect scaling (edge 200), B_crit 400
// in diminishing returns (edge 80), a fit above the sweep (B_crit infinite) in perfect scaling,
// B_crit 50 in diminishing returns (maximal from 250): 2 of 4 agree with the point fit's call.
// Ten of each (40, the fewest a 95% call reads: min_resamples): B / B_crit is 0.1, 0.25, 0 and
// 2, whose 2.5% and 97.5% quantiles are 0 and 2. Four fits alone are too few for either.
BOOST_AUTO_TEST_CASE(a_regime_call_carries_the_share_of_bootstrap_fits_that_agree) {
  const auto fit_with_b_crit = [](double b_crit, bool above_sweep) {
    CriticalBatchFit f;
    f.B_crit = f.B_noise = b_crit;
    f.above_sweep = above_sweep;
    return f;
  };
  const std::vector<CriticalBatchFit> four = {
      fit_with_b_crit(1000, false), fit_with_b_crit(400, false), fit_with_b_crit(1e30, true),
      fit_with_b_crit(50, false)};
  std::vector<CriticalBatchFit> replicates;
  for (int i = 0; i < 10; ++i) replicates.insert(replicates.end(), four.begin(), four.end());
  const RegimeCall call = regime_at(100, 1000, 0.2, replicates, 0.95);
  BOOST_TEST((call.regime == Regime::kPerfectScaling));
  BOOST_TEST(call.agreement == 0.5);
  BOOST_TEST(call.why.find("B is 0.1 [0, 2] x B_crit: examples to target are within 10% [0%, "
                           "200%] of E_min") != std::string::npos,
             call.why);
  const RegimeCall few = regime_at(100, 1000, 0.2, four, 0.95);
  BOOST_TEST(std::isnan(few.agreement));
  BOOST_TEST(few.why.find("B is 0.1 x B_crit: ") != std::string::npos, few.why);
  BOOST_TEST(std::isnan(regime_at(100, 1000, 0.2, {}, 0.95).agreement));
}

// The batch a budget allows, from S(B) = S_min (1 + B_noise / B) by hand, S_min 100, B_noise
// 1000 (E_min 1e5): within 130 steps B >= 1000 / 0.3 = 3333.3, so 3334 (3333 takes 130.003
// steps); within 2,000,050 examples E(B) = 1e5 (1 + B / 1000) gives B <= 19000.5, so 19000
// (19001 uses 2,000,100); 4 workers of 64 examples: 256.
BOOST_AUTO_TEST_CASE(a_budgets_batch_is_the_first_whole_batch_on_the_budgets_side_of_the_curve) {
  CriticalBatchFit f;
  f.S_min = 100.0, f.B_noise = 1000.0, f.E_min = 1e5, f.B_crit = 1000.0;
  BOOST_TEST(batch_for_budget({.max_steps = 130}, f) == 3334);
  BOOST_TEST(batch_for_budget({.max_examples = 2000050}, f) == 19000);
  BOOST_TEST(batch_for_budget({.workers = 4, .micro_batch = 64}, f) == 256);
  BOOST_CHECK_THROW(batch_for_budget({.max_steps = 100}, f), lbt::ConfigError);  // S_min itself
}
