// The adaptive batch's gain (analysis/adaptive_gain.hpp) against values derived by hand from
// McCandlish et al.'s per-step model (dS = ds (1 + B_noise / B), dE = ds (B + B_noise)):
// closed forms of gamma = <sqrt(B_noise)>^2 / <B_noise>, and a double-precision minimisation
// of S + lambda E over per-interval batches whose product (S/S_min - 1)(E/E_min - 1) must be
// gamma for every lambda.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "analysis/adaptive_gain.hpp"

using namespace lbt::analysis;

BOOST_AUTO_TEST_SUITE(adaptive_gain)

namespace {

// A trajectory with progress ds[i] at noise scale b_noise[i] and batch batch[i]: the steps
// advance by dS = ds (1 + B_noise / B). One more point closes the last interval.
std::vector<TrajectoryPoint> trajectory(const std::vector<double>& ds,
                                        const std::vector<double>& b_noise,
                                        const std::vector<double>& batch) {
  std::vector<TrajectoryPoint> t;
  double step = 0.0;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    t.push_back({step, b_noise[i], batch[i]});
    step += ds[i] * (1.0 + b_noise[i] / batch[i]);
  }
  t.push_back({step, b_noise.back(), batch.back()});
  return t;
}

// Golden-section minimum of f on [lo, hi] (f unimodal there), in log B: no use of the
// closed-form minimiser.
template <class F>
double golden_min(F f, double lo, double hi) {
  const double r = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = std::log(lo), b = std::log(hi);
  for (int it = 0; it < 200; ++it) {
    const double c = b - r * (b - a), d = a + r * (b - a);
    if (f(std::exp(c)) < f(std::exp(d)))
      b = d;
    else
      a = c;
  }
  return std::exp((a + b) / 2.0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(constant_noise_scale_gives_one) {
  const auto t = trajectory({1, 2, 3}, {50, 50, 50}, {10, 100, 1000});
  BOOST_TEST(predicted_gamma(t).value() == 1.0, boost::test_tools::tolerance(1e-14));
}

// Half the progress at B_noise = 1, half at 9: <sqrt> = 2, <B_noise> = 5, gamma = 4/5, whatever
// batches were used (they only change how many steps each half took).
BOOST_AUTO_TEST_CASE(two_levels_give_four_fifths) {
  const auto t = trajectory({0.5, 0.5}, {1, 9}, {3, 700});
  BOOST_TEST(predicted_gamma(t).value() == 0.8, boost::test_tools::tolerance(1e-14));
}

// B_noise(s) = a s on s in [0, 1], uniform ds: <sqrt(a s)> = (2/3) sqrt(a), <a s> = a / 2,
// gamma = (4/9) / (1/2) = 8/9. Midpoint sums of n intervals: error O(1/n^2) (sqrt's kink at 0
// makes it O(n^-1.5)).
BOOST_AUTO_TEST_CASE(linear_noise_scale_gives_eight_ninths) {
  const int n = 200000;
  const double a = 3000.0;
  std::vector<double> ds(n, 1.0 / n), b_noise(n), batch(n, 256.0);
  for (int i = 0; i < n; ++i) b_noise[i] = a * (i + 0.5) / n;
  BOOST_TEST(predicted_gamma(trajectory(ds, b_noise, batch)).value() == 8.0 / 9.0,
             boost::test_tools::tolerance(1e-6));
}

// The model's product for the batches used: (<B_noise/B>)(<B>)/<B_noise>. Levels 1 and 9 with
// equal progress: a fixed batch 5 gives (1/5 + 9/5)/2 x 5 / 5 = 1; B = 3 B_noise (3, 27) gives
// (1/3) x 15 / 5 = 1; B = 2 sqrt(B_noise) (2, 6) gives ((1/2 + 3/2)/2) x 4 / 5 = 4/5 = gamma.
BOOST_AUTO_TEST_CASE(model_product_is_one_for_fixed_and_proportional_and_gamma_for_sqrt) {
  const auto tol = boost::test_tools::tolerance(1e-14);
  BOOST_TEST(model_product(trajectory({0.5, 0.5}, {1, 9}, {5, 5})).value() == 1.0, tol);
  BOOST_TEST(model_product(trajectory({0.5, 0.5}, {1, 9}, {3, 27})).value() == 1.0, tol);
  BOOST_TEST(model_product(trajectory({0.5, 0.5}, {1, 9}, {2, 6})).value() == 0.8, tol);
}

BOOST_AUTO_TEST_CASE(unresolved_points_are_skipped_and_too_few_is_nullopt) {
  const double nan = std::nan("");
  auto t = trajectory({0.5, 0.5}, {1, 9}, {3, 700});
  t.insert(t.begin() + 1, {t[1].step - 1e-9, nan, 5.0});  // an unresolved report in between
  BOOST_TEST(predicted_gamma(t).value() == 0.8, boost::test_tools::tolerance(1e-6));
  const std::vector<TrajectoryPoint> one = {{0, 10, 10}, {5, nan, 10}};
  BOOST_TEST(!predicted_gamma(one).has_value());
}

// The optimal per-interval batches for S + lambda E, found numerically on a random B_noise
// profile with random progress: S and E summed from the model, the product equals gamma of that
// trajectory, for two lambdas a factor 100 apart.
BOOST_AUTO_TEST_CASE(minimising_steps_plus_lambda_examples_gives_product_gamma) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(5.0, 1.2);
  std::uniform_real_distribution<double> progress(0.1, 2.0);
  const int n = 60;
  std::vector<double> ds(n), b_noise(n);
  for (int i = 0; i < n; ++i) ds[i] = progress(rng), b_noise[i] = noise(rng);
  double S_min = 0.0, E_min = 0.0;
  for (int i = 0; i < n; ++i) S_min += ds[i], E_min += ds[i] * b_noise[i];
  for (double lambda : {1e-2, 1e-4}) {
    std::vector<double> batch(n);
    double S = 0.0, E = 0.0;
    for (int i = 0; i < n; ++i) {
      const auto cost = [&](double B) {
        return ds[i] * (1.0 + b_noise[i] / B) + lambda * ds[i] * (B + b_noise[i]);
      };
      batch[i] = golden_min(cost, 1e-3, 1e9);
      S += ds[i] * (1.0 + b_noise[i] / batch[i]);
      E += ds[i] * (batch[i] + b_noise[i]);
    }
    const double product = (S / S_min - 1.0) * (E / E_min - 1.0);
    BOOST_TEST_CONTEXT("lambda " << lambda) {
      BOOST_TEST(product < 1.0);
      BOOST_TEST(predicted_gamma(trajectory(ds, b_noise, batch)).value() == product,
                 boost::test_tools::tolerance(1e-9));
      BOOST_TEST(model_product(trajectory(ds, b_noise, batch)).value() == product,
                 boost::test_tools::tolerance(1e-9));
    }
  }
}

// S = 150 [140, 150] steps, E = 3000 [2800, 3000] examples against S_min = 100 [90, 110],
// E_min = 1000 [800, 1200]: P = 0.5 x 2 = 1; lo = (140/110 - 1)(2800/1200 - 1) = (3/11)(4/3)
// = 4/11; hi = (150/90 - 1)(3000/800 - 1) = (2/3)(11/4) = 11/6.
BOOST_AUTO_TEST_CASE(measured_product_and_its_bounds_by_hand) {
  const auto p =
      measured_product({150, 140, 150}, {3000, 2800, 3000}, {100, 90, 110}, {1000, 800, 1200});
  BOOST_TEST(p.value.value() == 1.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p.lo.value() == 4.0 / 11.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p.hi.value() == 11.0 / 6.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p.why.empty());
}

// A lower end of S below S_min's upper end: that factor's lower bound is 0, not negative; an
// S_min interval reaching 0 leaves the upper bound open.
BOOST_AUTO_TEST_CASE(bounds_stay_non_negative_and_open_where_unbounded) {
  const auto p =
      measured_product({150, 100, 150}, {3000, 2800, 3000}, {120, 0, 130}, {1000, 800, 1200});
  BOOST_TEST(p.value.value() == (150.0 / 120 - 1) * 2.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p.lo.value() == 0.0);
  BOOST_TEST(!p.hi.has_value());
}

BOOST_AUTO_TEST_CASE(unresolved_products_are_nullopt_with_a_reason) {
  const Bracket S{150, 140, 150}, E{3000, 2800, 3000};
  const auto beat = measured_product({90, 80, 90}, E, {100, 90, 110}, {1000, 800, 1200});
  BOOST_TEST(!beat.value.has_value());
  BOOST_TEST(!beat.why.empty());
  const auto no_fit = measured_product(S, E, {std::nan(""), 0, 0}, {1000, 800, 1200});
  BOOST_TEST(!no_fit.value.has_value());
  BOOST_TEST(!no_fit.why.empty());
}

// Two seeds (steps 140 (130, 140] and 160 (150, 160], examples 2800 and 3200) against a fit
// S_min = 100 [90, 110], E_min = 1000 [800, 1200]: medians 150 and 3000, P = 0.5 x 2 = 1;
// lo = (130/110 - 1)(E_lo/1200 - 1) with E_lo = 2600, hi = (160/90 - 1)(3200/800 - 1).
BOOST_AUTO_TEST_CASE(summary_over_seeds_by_hand) {
  std::vector<AdaptiveSeed> seeds(3);
  seeds[0] = {"adaptive_0", "reached_target", true, {140, 130, 140}, {2800, 2600, 2800}, 0.9};
  seeds[1] = {"adaptive_1", "reached_target", true, {160, 150, 160}, {3200, 3000, 3200}, 0.8};
  seeds[2] = {"adaptive_2", "budget_exhausted", false, {}, {}, 0.7};
  const nlohmann::json fit = {
      {"S_min", 100.0},
      {"E_min", 1000.0},
      {"intervals", {{"S_min", {90.0, 110.0}}, {"E_min", {800.0, 1200.0}}}}};
  const auto a = adaptive_summary(seeds, fit);
  BOOST_TEST(a["seeds_reached"] == 2);
  BOOST_TEST(a["steps_to_target"]["median"].get<double>() == 150.0);
  BOOST_TEST(a["examples_to_target"]["max"].get<double>() == 3200.0);
  BOOST_TEST(a["gamma_predicted"]["median"].get<double>() == 0.8);
  BOOST_TEST(a["seeds"][2]["steps_to_target"].is_null());
  const auto& p = a["measured_product"];
  BOOST_TEST(p["value"].get<double>() == 1.0, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p["S_over_S_min"].get<double>() == 1.5);
  BOOST_TEST(p["E_over_E_min"].get<double>() == 3.0);
  BOOST_TEST(p["lo"].get<double>() == (130.0 / 110 - 1) * (2600.0 / 1200 - 1),
             boost::test_tools::tolerance(1e-14));
  BOOST_TEST(p["hi"].get<double>() == (160.0 / 90 - 1) * (3200.0 / 800 - 1),
             boost::test_tools::tolerance(1e-14));
  // No fit, or no seed reached: null with a reason.
  const auto no_fit = adaptive_summary(seeds, nlohmann::json());
  BOOST_TEST(no_fit["measured_product"]["value"].is_null());
  BOOST_TEST(no_fit["measured_product"]["why"].is_string());
  const auto none = adaptive_summary({seeds[2]}, fit);
  BOOST_TEST(none["steps_to_target"]["median"].is_null());
  BOOST_TEST(none["measured_product"]["value"].is_null());
  BOOST_TEST(none["measured_product"]["why"].is_string());
}

BOOST_AUTO_TEST_SUITE_END()
