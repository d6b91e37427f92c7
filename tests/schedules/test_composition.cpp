// schedules/: join, scaled, clamp, shifted; continuity where the parts agree, bad joins rejected.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <stdexcept>

#include "schedules/decay.hpp"
#include "schedules/schedule.hpp"
#include "schedules/warmup.hpp"
#include "support/tolerance.hpp"

using namespace lbt::schedules;

BOOST_AUTO_TEST_CASE(join_later_parts_see_step_minus_boundary) {
  Schedule identity = [](std::int64_t t) { return double(t); };
  auto s = join({constant(-1.0), identity, identity}, {5, 12});
  BOOST_TEST(s(0) == -1.0);
  BOOST_TEST(s(4) == -1.0);
  BOOST_TEST(s(5) == 0.0);
  BOOST_TEST(s(11) == 6.0);
  BOOST_TEST(s(12) == 0.0);
  BOOST_TEST(s(20) == 8.0);
}

BOOST_AUTO_TEST_CASE(warmup_then_cosine_is_continuous_at_the_boundary) {
  const double peak = 0.4;
  const std::int64_t W = 10, total = 100;
  auto s = join({warmup_linear(0.0, peak, W), cosine_decay(peak, total - W, 0.0)}, {W});
  BOOST_TEST(s(0) == 0.0);
  BOOST_TEST(lbt::test::close(s(W - 1), peak * 9.0 / 10.0, 1e-15, 1e-12));
  BOOST_TEST(s(W) == peak);  // the warmup's limit and the decay's start agree
  BOOST_TEST(lbt::test::close(s(W + 45), peak * 0.5, 1e-15, 1e-12));
  BOOST_TEST(s(total) == 0.0);
  BOOST_TEST(s(10 * total) == 0.0);
  // The step into the boundary is no bigger than any other warmup step.
  BOOST_TEST(std::abs(s(W) - s(W - 1)) <= peak / W + 1e-15);
}

BOOST_AUTO_TEST_CASE(bad_joins_are_rejected) {
  auto a = constant(1.0), b = constant(2.0), c = constant(3.0);
  BOOST_CHECK_THROW(join({}, {}), std::invalid_argument);
  BOOST_CHECK_THROW(join({a, b}, {}), std::invalid_argument);          // too few boundaries
  BOOST_CHECK_THROW(join({a, b}, {3, 4}), std::invalid_argument);      // too many
  BOOST_CHECK_THROW(join({a, b, c}, {5, 5}), std::invalid_argument);   // not strictly increasing
  BOOST_CHECK_THROW(join({a, b, c}, {6, 5}), std::invalid_argument);   // decreasing
  BOOST_CHECK_THROW(join({a, b}, {0}), std::invalid_argument);         // empty first part
  BOOST_CHECK_THROW(join({a, Schedule{}}, {2}), std::invalid_argument);
  BOOST_TEST(join({a}, {})(7) == 1.0);
}

BOOST_AUTO_TEST_CASE(scaled_clamp_and_shifted) {
  auto ramp = linear(0.0, 1.0, 10);
  BOOST_TEST(scaled(ramp, 4.0)(5) == 2.0);
  auto clamped = clamp(ramp, 0.2, 0.7);
  BOOST_TEST(clamped(0) == 0.2);
  BOOST_TEST(clamped(5) == 0.5);
  BOOST_TEST(clamped(9) == 0.7);
  BOOST_CHECK_THROW(clamp(ramp, 1.0, 0.0), std::invalid_argument);
  BOOST_TEST(shifted(ramp, 3)(2) == 0.5);
  BOOST_CHECK_THROW(shifted(ramp, -1), std::invalid_argument);
  BOOST_CHECK_THROW(scaled(ramp, INFINITY), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(first_update_uses_lr_at_step_zero) {
  // The convention in schedule.hpp: step 0 is the first update, so lr(0) is what it gets.
  auto s = join({warmup_linear(0.01, 1.0, 4), constant(1.0)}, {4});
  BOOST_TEST(s(0) == 0.01);
}
