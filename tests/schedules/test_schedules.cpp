// schedules/: warmup shapes and decays against formulas written here, at step 0, the last step
// of a phase, the boundary, and past the end (optax _schedule_test.py style).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "schedules/decay.hpp"
#include "schedules/scaling.hpp"
#include "schedules/warmup.hpp"
#include "support/tolerance.hpp"

using namespace lbt::schedules;

namespace {
constexpr double kAtol = 1e-14, kRtol = 1e-12;
void expect(const Schedule& s, std::int64_t step, double want) {
  const double got = s(step);
  BOOST_CHECK_MESSAGE(lbt::test::close(got, want, kAtol, kRtol),
                      "lr(" << step << ") = " << got << ", want " << want);
}
}  // namespace

// ---- warmups: W = 10, start = 0.1, peak = 2 ----

BOOST_AUTO_TEST_CASE(linear_warmup_starts_at_start_and_reaches_peak_at_step_w) {
  auto s = warmup_linear(0.1, 2.0, 10);
  expect(s, 0, 0.1);
  expect(s, 1, 0.1 + 1.9 / 10);
  expect(s, 9, 0.1 + 1.9 * 9 / 10);  // 1.81
  expect(s, 10, 2.0);
  expect(s, 1000, 2.0);
}

BOOST_AUTO_TEST_CASE(constant_warmup_holds_start_until_step_w) {
  auto s = warmup_constant(0.1, 2.0, 10);
  expect(s, 0, 0.1);
  expect(s, 9, 0.1);
  expect(s, 10, 2.0);
  expect(s, 99, 2.0);
}

BOOST_AUTO_TEST_CASE(exponential_warmup_rises_geometrically) {
  auto s = warmup_exponential(0.1, 2.0, 10);
  expect(s, 0, 0.1);
  expect(s, 5, 0.1 * std::sqrt(20.0));  // halfway in log space
  expect(s, 9, 0.1 * std::pow(20.0, 0.9));
  expect(s, 10, 2.0);
  expect(s, 11, 2.0);
  BOOST_CHECK_THROW(warmup_exponential(0.0, 2.0, 10), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(quadratic_warmup_is_square_of_progress) {
  auto s = warmup_quadratic(0.1, 2.0, 10);
  expect(s, 0, 0.1);
  expect(s, 5, 0.1 + 1.9 * 0.25);
  expect(s, 9, 0.1 + 1.9 * 0.81);  // 1.639
  expect(s, 10, 2.0);
  expect(s, 500, 2.0);
}

BOOST_AUTO_TEST_CASE(warmups_reject_zero_length_and_non_finite_values) {
  BOOST_CHECK_THROW(warmup_linear(0.0, 1.0, 0), std::invalid_argument);
  BOOST_CHECK_THROW(warmup_constant(0.0, 1.0, -3), std::invalid_argument);
  BOOST_CHECK_THROW(warmup_quadratic(0.0, NAN, 5), std::invalid_argument);
}

// ---- decays: peak = 2 ----

BOOST_AUTO_TEST_CASE(linear_decay_reaches_end_and_holds) {
  auto s = linear(2.0, 0.2, 100);
  expect(s, 0, 2.0);
  expect(s, 50, 1.1);
  expect(s, 99, 2.0 - 1.8 * 0.99);  // 0.218
  expect(s, 100, 0.2);
  expect(s, 1000, 0.2);
  BOOST_CHECK_THROW(linear(1.0, 0.0, 0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(step_decay_multiplies_by_gamma_every_period) {
  auto s = step_decay(2.0, 0.1, 30);
  expect(s, 0, 2.0);
  expect(s, 29, 2.0);
  expect(s, 30, 0.2);
  expect(s, 59, 0.2);
  expect(s, 60, 0.02);
  expect(s, 90, 0.002);
  BOOST_CHECK_THROW(step_decay(2.0, 0.1, 0), std::invalid_argument);
  BOOST_CHECK_THROW(step_decay(2.0, 0.0, 10), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(multistep_decay_drops_at_each_milestone) {
  auto s = multistep_decay(2.0, 0.5, {10, 25});
  expect(s, 0, 2.0);
  expect(s, 9, 2.0);
  expect(s, 10, 1.0);
  expect(s, 24, 1.0);
  expect(s, 25, 0.5);
  expect(s, 100000, 0.5);
  BOOST_CHECK_THROW(multistep_decay(2.0, 0.5, {10, 10}), std::invalid_argument);
  BOOST_CHECK_THROW(multistep_decay(2.0, 0.5, {20, 10}), std::invalid_argument);
  BOOST_CHECK_THROW(multistep_decay(2.0, 0.5, {0, 10}), std::invalid_argument);
  BOOST_CHECK_THROW(multistep_decay(2.0, 0.5, {}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(exponential_decay_smooth_and_staircase) {
  auto smooth = exponential_decay(2.0, 0.5, 10, false);
  expect(smooth, 0, 2.0);
  expect(smooth, 5, 2.0 * std::sqrt(0.5));
  expect(smooth, 10, 1.0);
  expect(smooth, 20, 0.5);
  auto stairs = exponential_decay(2.0, 0.5, 10, true);
  expect(stairs, 0, 2.0);
  expect(stairs, 9, 2.0);
  expect(stairs, 10, 1.0);
  expect(stairs, 19, 1.0);
  expect(stairs, 20, 0.5);
}

BOOST_AUTO_TEST_CASE(inverse_time_decay_smooth_and_staircase) {
  auto smooth = inverse_time_decay(2.0, 1.0, 10, false);
  expect(smooth, 0, 2.0);
  expect(smooth, 5, 2.0 / 1.5);
  expect(smooth, 10, 1.0);
  expect(smooth, 30, 0.5);
  auto stairs = inverse_time_decay(2.0, 1.0, 10, true);
  expect(stairs, 9, 2.0);
  expect(stairs, 10, 1.0);
  expect(stairs, 25, 2.0 / 3.0);
  BOOST_CHECK_THROW(inverse_time_decay(2.0, -1.0, 10, false), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(polynomial_decay_power_two_reaches_end) {
  auto s = polynomial_decay(2.0, 0.2, 100, 2.0);
  expect(s, 0, 2.0);
  expect(s, 50, 0.2 + 1.8 * 0.25);    // 0.65
  expect(s, 99, 0.2 + 1.8 * 0.0001);  // 0.20018
  expect(s, 100, 0.2);
  expect(s, 200, 0.2);
  BOOST_CHECK_THROW(polynomial_decay(2.0, 0.2, 100, 0.0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(cosine_decay_to_final_fraction) {
  auto s = cosine_decay(2.0, 100, 0.1);  // end = 0.2
  expect(s, 0, 2.0);
  expect(s, 50, 1.1);
  expect(s, 99, 0.2 + 0.9 * (1.0 + std::cos(0.99 * std::numbers::pi)));
  expect(s, 100, 0.2);
  expect(s, 150, 0.2);
  auto to_zero = cosine_decay(2.0, 100);
  expect(to_zero, 100, 0.0);
  BOOST_CHECK_THROW(cosine_decay(2.0, 0), std::invalid_argument);
  BOOST_CHECK_THROW(cosine_decay(2.0, 10, -0.1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(inverse_sqrt_decay_matches_vaswani_after_warmup) {
  auto s = inverse_sqrt_decay(2.0, 100.0);
  expect(s, 0, 2.0);
  expect(s, 300, 1.0);  // 2 * sqrt(100 / 400)
  expect(s, 700, 2.0 * std::sqrt(100.0 / 800.0));
  BOOST_CHECK_THROW(inverse_sqrt_decay(2.0, 0.0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(wsd_is_stable_then_cools_down_in_each_shape) {
  auto lin = wsd(2.0, 80, 20, 0.0, CooldownShape::kLinear);
  expect(lin, 0, 2.0);
  expect(lin, 79, 2.0);
  expect(lin, 80, 2.0);
  expect(lin, 90, 1.0);
  expect(lin, 99, 0.1);
  expect(lin, 100, 0.0);
  expect(lin, 200, 0.0);
  auto cos = wsd(2.0, 80, 20, 0.1, CooldownShape::kCosine);
  expect(cos, 90, 0.2 + 1.8 * 0.5);
  expect(cos, 100, 0.2);
  auto sqrt_shape = wsd(2.0, 80, 20, 0.0, CooldownShape::kOneMinusSqrt);
  expect(sqrt_shape, 85, 2.0 * (1.0 - std::sqrt(0.25)));
  expect(sqrt_shape, 100, 0.0);
  auto no_stable = wsd(2.0, 0, 20, 0.0, CooldownShape::kLinear);
  expect(no_stable, 10, 1.0);
  BOOST_CHECK_THROW(wsd(2.0, 80, 0, 0.0, CooldownShape::kLinear), std::invalid_argument);
}

// ---- scaling rules ----

BOOST_AUTO_TEST_CASE(linear_and_sqrt_scaling_at_several_batches) {
  const std::int64_t B0 = 256;
  const std::int64_t batches[] = {64, 256, 512, 1024, 8192};
  const double linear_want[] = {0.25, 1.0, 2.0, 4.0, 32.0};
  const double sqrt_want[] = {0.5, 1.0, std::sqrt(2.0), 2.0, std::sqrt(32.0)};
  for (int i = 0; i < 5; ++i) {
    BOOST_TEST_CONTEXT("B = " << batches[i]) {
      BOOST_TEST(lbt::test::close(scaling_factor(ScalingRule::kLinear, batches[i], B0),
                                  linear_want[i], 0, 1e-15));
      BOOST_TEST(lbt::test::close(scaling_factor(ScalingRule::kSqrt, batches[i], B0), sqrt_want[i],
                                  0, 1e-15));
      BOOST_TEST(scaling_factor(ScalingRule::kNone, batches[i], B0) == 1.0);
    }
  }
  BOOST_TEST(legw_warmup_epochs(2.0, 1024, 256) == 8.0);
}
