// B_simple on the Hessian probe's own small batches (experiments/hessian_probe.hpp): its
// estimate is the spread form of tr(Sigma) / |G|^2 computed here independently, and its 95%
// interval covers the true B_simple of Gaussian small-batch gradients about 95% of the time.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "experiments/hessian_probe.hpp"

using lbt::experiments::b_simple_of_batches;

namespace {

// K small-batch gradients g_k = G + xi_k, xi_k ~ N(0, sigma^2 / b I) (the mean of b examples
// whose gradients have covariance sigma^2 I): tr(Sigma) = d sigma^2.
std::vector<std::vector<float>> small_batches(const std::vector<double>& G, int K, double b,
                                              double sigma, std::mt19937_64& rng) {
  std::normal_distribution<double> z;
  std::vector<std::vector<float>> g(K, std::vector<float>(G.size()));
  for (auto& gk : g)
    for (std::size_t i = 0; i < G.size(); ++i)
      gk[i] = static_cast<float>(G[i] + sigma / std::sqrt(b) * z(rng));
  return g;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(hessian_probe_b_simple)

BOOST_AUTO_TEST_CASE(the_estimate_is_the_spread_form) {
  std::mt19937_64 rng(3);
  const std::vector<double> G(40, 0.2);
  const int K = 16;
  const double b = 32;
  const auto g = small_batches(G, K, b, 1.0, rng);
  // tr(Sigma) = b sum_k |g_k - mean|^2 / (K - 1); |G|^2 = |mean|^2 - tr(Sigma) / (K b).
  std::vector<double> mean(G.size(), 0.0);
  for (const auto& gk : g)
    for (std::size_t i = 0; i < G.size(); ++i) mean[i] += gk[i] / K;
  double spread = 0.0, mean_sq = 0.0;
  for (const auto& gk : g)
    for (std::size_t i = 0; i < G.size(); ++i) spread += (gk[i] - mean[i]) * (gk[i] - mean[i]);
  for (double m : mean) mean_sq += m * m;
  const double tr = b * spread / (K - 1), G_sq = mean_sq - tr / (K * b);
  const auto r = b_simple_of_batches(g, static_cast<std::int64_t>(b));
  BOOST_REQUIRE(r.resolved);
  BOOST_TEST(r.b_noise == tr / G_sq, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.ci_low >= 0.0);
  BOOST_TEST(r.ci_low <= r.b_noise);
  BOOST_TEST(r.b_noise <= r.ci_high);
}

BOOST_AUTO_TEST_CASE(its_interval_covers_the_true_b_simple) {
  // d = 50, sigma = 1, |G|^2 = 1.25: B_simple = d sigma^2 / |G|^2 = 40, resolved at K = 16.
  const std::vector<double> G(50, std::sqrt(1.25 / 50));
  const double truth = 50.0 / 1.25;
  const int repeats = 400;
  int covered = 0;
  for (int s = 0; s < repeats; ++s) {
    std::mt19937_64 rng(1000 + s);
    const auto r = b_simple_of_batches(small_batches(G, 16, 32, 1.0, rng), 32);
    BOOST_TEST(r.ci_low >= 0.0);
    const double hi = std::isfinite(r.ci_high) ? r.ci_high : INFINITY;
    covered += r.ci_low <= truth && truth <= hi;
  }
  const double coverage = static_cast<double>(covered) / repeats;
  BOOST_TEST_MESSAGE("coverage " << coverage);
  // 95% nominal; 400 draws give a standard error of 1.1%.
  BOOST_TEST(coverage >= 0.91);
  BOOST_TEST(coverage <= 0.99);
}

BOOST_AUTO_TEST_SUITE_END()
