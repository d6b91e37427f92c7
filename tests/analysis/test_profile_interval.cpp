// Profile-likelihood intervals of the critical-batch fit (analysis/profile_interval.hpp):
// coverage over seeded repetitions of S = S_min (1 + B_crit / B) with log-normal noise, where
// the percentile bootstrap over batch sizes held the truth in 80-92% (docs/python.md), and
// each edge of B_crit's interval checked by a brute-force refit with B_crit held there.
#include <boost/math/distributions/students_t.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "analysis/critical_batch.hpp"
#include "analysis/profile_interval.hpp"

using namespace lbt::analysis;

BOOST_AUTO_TEST_SUITE(profile_interval)

namespace {

const double kSMin = 50.0, kBCrit = 300.0;

std::vector<ScalingPoint> noisy_points(const std::vector<double>& batches, double sigma,
                                       std::mt19937_64& rng) {
  std::normal_distribution<double> z(0.0, sigma);
  std::vector<ScalingPoint> points;
  for (double B : batches) points.push_back({B, kSMin * (1 + kBCrit / B) * std::exp(z(rng))});
  return points;
}

// The least SSR in log S with B_crit = c held, over S_min on a fine grid of log S_min (the
// test's own refit: no closed form, no shared code).
double refit_ssr_with_b_crit(const std::vector<ScalingPoint>& points, double c) {
  double best = HUGE_VAL;
  for (double log_a = 0.0; log_a < std::log(1e4); log_a += 1e-5) {  // S_min in [1, 1e4]
    double sum = 0.0;
    for (const auto& p : points) {
      const double r = std::log(p.steps) - log_a - std::log(1 + c / p.batch_size);
      sum += r * r;
    }
    best = std::min(best, sum);
  }
  return best;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_intervals_hold_the_truth_in_about_95_of_400_noisy_sweeps) {
  const std::vector<std::vector<double>> grids = {{16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
                                                  {16, 64, 256, 1024, 4096}};
  for (const auto& batches : grids) {
    std::mt19937_64 rng(20261129 + batches.size());
    int s_min = 0, e_min = 0, b_crit = 0, reps = 400;
    for (int rep = 0; rep < reps; ++rep) {
      const auto points = noisy_points(batches, 0.1, rng);
      const auto ci = profile_critical_batch(points, fit_critical_batch(points));
      s_min += ci.S_min.lo <= kSMin && kSMin <= ci.S_min.hi;
      e_min += ci.E_min.lo <= kSMin * kBCrit && kSMin * kBCrit <= ci.E_min.hi;
      b_crit += ci.B_crit.lo <= kBCrit && kBCrit <= ci.B_crit.hi;
    }
    BOOST_TEST_MESSAGE(batches.size()
                       << " batch sizes: 95% profile intervals held S_min in " << s_min
                       << ", E_min in " << e_min << ", B_crit in " << b_crit << " of " << reps);
    // Binomial(400, 0.95) lies in [370, 390] with 99% probability.
    for (int hits : {s_min, e_min, b_crit}) {
      BOOST_TEST(hits >= 370);
      BOOST_TEST(hits <= 392);
    }
  }
}

BOOST_AUTO_TEST_CASE(b_crits_edges_are_where_a_refit_with_b_crit_held_reaches_the_f_limit) {
  std::mt19937_64 rng(7);
  const auto points = noisy_points({16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, 0.1, rng);
  const CriticalBatchFit fit = fit_critical_batch(points);
  const auto ci = profile_critical_batch(points, fit);
  const double least = refit_ssr_with_b_crit(points, fit.B_crit);
  const double t = boost::math::quantile(boost::math::students_t(7.0), 0.975);
  const double limit = least * (1 + t * t / 7.0);
  BOOST_TEST_MESSAGE("B_crit " << fit.B_crit << " [" << ci.B_crit.lo << ", " << ci.B_crit.hi
                               << "]");
  BOOST_TEST(ci.B_crit.lo < fit.B_crit);
  BOOST_TEST(fit.B_crit < ci.B_crit.hi);
  BOOST_TEST(refit_ssr_with_b_crit(points, ci.B_crit.lo) == limit,
             boost::test_tools::tolerance(1e-6));
  BOOST_TEST(refit_ssr_with_b_crit(points, ci.B_crit.hi) == limit,
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(perfect_scaling_leaves_b_crit_open_above_and_s_min_down_to_0) {
  // S = 102400 / B with 2% noise: the data allow any B_crit past the sweep and S_min -> 0.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 0.02);
  std::vector<ScalingPoint> points;
  for (double B : {16.0, 64.0, 256.0, 1024.0})
    points.push_back({B, 102400.0 / B * std::exp(z(rng))});
  const auto ci = profile_critical_batch(points, fit_critical_batch(points));
  BOOST_TEST(std::isinf(ci.B_crit.hi));
  BOOST_TEST(ci.B_crit.lo > 1024.0);  // well past the largest batch: the steps fall as 1/B
  BOOST_TEST(ci.S_min.lo == 0.0);
  BOOST_TEST(std::isfinite(ci.S_min.hi));
  BOOST_TEST(ci.E_min.lo > 0.0);
  BOOST_TEST(std::isfinite(ci.E_min.hi));
}

BOOST_AUTO_TEST_SUITE_END()
