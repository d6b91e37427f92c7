// Hessian-weighted B_noise = tr(H Sigma) / (G^T H G) (McCandlish et al. 2018, arXiv:1812.06162,
// eq. 2.8) and its interval, on linear regression whose Hessian is not the identity:
// x ~ N(0, Lambda), Lambda = diag(lambda), y = x.w* + eps, eps ~ N(0, s^2), loss (x.w - y)^2 / 2.
// At w = w* + delta, per-example gradients g = x (x.delta - eps), so (Isserlis' theorem)
//   H = Lambda,  G = Lambda delta,
//   Sigma = E[g g^T] - G G^T = Lambda (delta^T Lambda delta + s^2) + Lambda delta delta^T Lambda,
//   tr(H Sigma) = tr(Lambda^2) (delta^T Lambda delta + s^2) + delta^T Lambda^3 delta,
//   G^T H G = delta^T Lambda^3 delta,
// computed here in double; the estimator sees only sampled small-batch gradients and a
// gradient oracle (the population gradient Lambda (w - w*)) for its Hessian-vector products.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "noise/hessian_noise.hpp"

using namespace lbt;

namespace {

struct Regression {
  std::vector<double> lambda = {0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0};
  std::vector<double> delta = {0.4, -0.3, 0.2, 0.25, -0.15, 0.1, 0.05, -0.08};
  double s = 1.5;  // label noise
  std::size_t d() const { return lambda.size(); }
  double closed_trace() const {
    double tr_l2 = 0.0, dLd = 0.0, dL3d = 0.0;
    for (std::size_t i = 0; i < d(); ++i) {
      tr_l2 += lambda[i] * lambda[i];
      dLd += delta[i] * lambda[i] * delta[i];
      dL3d += delta[i] * std::pow(lambda[i], 3) * delta[i];
    }
    return tr_l2 * (dLd + s * s) + dL3d;
  }
  double closed_gHg() const {
    double dL3d = 0.0;
    for (std::size_t i = 0; i < d(); ++i) dL3d += delta[i] * std::pow(lambda[i], 3) * delta[i];
    return dL3d;
  }
  // K small-batch mean gradients of b examples each
  std::vector<std::vector<float>> small_batches(std::size_t K, int b, std::uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    std::vector<std::vector<float>> out(K, std::vector<float>(d()));
    std::vector<double> x(d()), g(d());
    for (auto& gk : out) {
      std::fill(g.begin(), g.end(), 0.0);
      for (int n = 0; n < b; ++n) {
        double r = -s * normal(rng);  // x.delta - eps
        for (std::size_t i = 0; i < d(); ++i) {
          x[i] = std::sqrt(lambda[i]) * normal(rng);
          r += x[i] * delta[i];
        }
        for (std::size_t i = 0; i < d(); ++i) g[i] += x[i] * r / b;
      }
      for (std::size_t i = 0; i < d(); ++i) gk[i] = static_cast<float>(g[i]);
    }
    return out;
  }
  noise::GradientFn oracle() const {  // population gradient Lambda (w - w*), w* = 0
    return [this](std::span<const float> w, std::span<float> out) {
      for (std::size_t i = 0; i < d(); ++i) out[i] = static_cast<float>(lambda[i] * w[i]);
    };
  }
  std::vector<float> theta() const { return {delta.begin(), delta.end()}; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(b_noise_on_regression_with_a_non_identity_hessian_matches_the_closed_form) {
  const Regression p;
  const double b = 16, truth = p.closed_trace() / p.closed_gHg();
  const auto h = noise::hessian_noise_scale(p.oracle(), p.theta(), p.small_batches(400, 16, 7), b);
  BOOST_TEST_MESSAGE("tr(H Sigma) " << h.tr_H_sigma << " closed form " << p.closed_trace()
                                    << "; G^T H G " << h.gHg << " closed form " << p.closed_gHg()
                                    << "; B_noise " << h.b_noise << " [" << h.ci_low << ", "
                                    << h.ci_high << "] closed form " << truth);
  BOOST_TEST(h.resolved);
  BOOST_TEST(std::abs(h.tr_H_sigma - p.closed_trace()) <= 0.10 * p.closed_trace());
  BOOST_TEST(std::abs(h.gHg - p.closed_gHg()) <= 0.10 * p.closed_gHg());
  BOOST_TEST(std::abs(h.b_noise - truth) <= 0.10 * truth);
  BOOST_TEST(h.ci_low >= 0.0);
  BOOST_TEST((h.ci_low <= truth && truth <= h.ci_high));
}

BOOST_AUTO_TEST_CASE(b_noise_interval_covers_the_closed_form_about_95_percent_of_the_time) {
  // 200 seeded repeats of K = 40 small batches: a calibrated 95% interval covers ~190; 178 or
  // fewer happens with probability ~0.1% for it. Unresolved draws (upper end +inf) count as
  // covering when their lower end is below the truth, as the interval then says.
  const Regression p;
  const double b = 16, truth = p.closed_trace() / p.closed_gHg();
  int covered = 0, unresolved = 0, trace_covered = 0, gHg_covered = 0;
  const int runs = 200;
  const auto inside = [](double truth, double value, double half) {
    return value - half <= truth && truth <= value + half;
  };
  for (int seed = 0; seed < runs; ++seed) {
    const auto h =
        noise::hessian_noise_scale(p.oracle(), p.theta(), p.small_batches(40, 16, 1000 + seed), b);
    BOOST_TEST(h.ci_low >= 0.0);
    unresolved += !h.resolved;
    covered += h.ci_low <= truth && truth <= h.ci_high;
    // The numerator's and denominator's own intervals (written since 2026-11-30).
    trace_covered += inside(p.closed_trace(), h.tr_H_sigma, h.tr_H_sigma_half);
    gHg_covered += inside(p.closed_gHg(), h.gHg, h.gHg_half);
  }
  BOOST_TEST_MESSAGE("B_noise interval covered the closed form in "
                     << covered << " of " << runs << " (" << unresolved << " unresolved); "
                     << "tr(H Sigma)'s " << trace_covered << ", G^T H G's " << gHg_covered);
  BOOST_TEST(covered >= 179);
  BOOST_TEST(trace_covered >= 179);  // 189 when written
  // 179 when written (89.5%): a t interval over the jackknife runs a little short for the
  // off-diagonal mean at K = 40, as docs/noise.md says; 170 would be ~85%.
  BOOST_TEST(gHg_covered >= 170);
}

BOOST_AUTO_TEST_CASE(b_noise_is_unresolved_with_a_null_upper_end_when_the_gradient_is_noise) {
  // At the optimum (delta = 0) G^T H G = 0: no finite B_noise, the upper end is unbounded.
  Regression p;
  std::fill(p.delta.begin(), p.delta.end(), 0.0);
  const auto h = noise::hessian_noise_scale(p.oracle(), p.theta(), p.small_batches(40, 16, 3), 16);
  BOOST_TEST(!h.resolved);
  BOOST_TEST(std::isnan(h.b_noise));
  BOOST_TEST(std::isinf(h.ci_high));
  BOOST_TEST(h.ci_low >= 0.0);
}

// G^T H G significantly below 0 (an indefinite H along the gradient) with tr(H Sigma) within
// noise of 0: Fieller's set is bounded there, and the probe wrote B_noise null beside a finite
// interval. Unresolved, it is never bounded above (reported_ratio), as B_simple's. M's
// off-diagonal entries (G^T H G) are -1 + 0.01 (k + l) % 3 and its diagonal -1 + (-0.05, 0.05,
// 0, 0.03, -0.03): tr(H Sigma) = b (mean diagonal - mean off-diagonal) lies within its noise.
BOOST_AUTO_TEST_CASE(an_unresolved_b_noise_has_no_upper_end_even_where_fieller_bounds_it) {
  const std::size_t K = 5;
  const double diagonal[K] = {-0.05, 0.05, 0.0, 0.03, -0.03};
  std::vector<double> M(K * K);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t l = 0; l < K; ++l)
      M[k * K + l] = k == l ? -1.0 + diagonal[k] : -1.0 + 0.01 * static_cast<double>((k + l) % 3);
  const auto h = noise::hessian_noise_from_products(M, K, 16.0);
  BOOST_TEST(h.gHg < 0.0);
  BOOST_TEST(!h.resolved);
  BOOST_TEST(std::isnan(h.b_noise));
  BOOST_TEST(h.ci_low == 0.0);
  BOOST_TEST(std::isinf(h.ci_high));
}
