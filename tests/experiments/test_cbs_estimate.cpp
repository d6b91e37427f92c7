// lbt cbs's estimate from branch losses (experiments/cbs/cbs_estimate.hpp), against values
// worked out by hand from Merrill et al. 2025's rule: the largest k whose loss stays within the
// tolerance of the reference (k = 1) branch's mean loss.
#define BOOST_TEST_MODULE cbs
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "experiments/cbs/cbs_estimate.hpp"

using lbt::experiments::BranchLoss;
using lbt::experiments::estimate_cbs;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// losses[k index][seed] for multipliers {1, 2, 4, 8}.
std::vector<BranchLoss> table(const std::vector<std::vector<double>>& by_k) {
  const std::vector<std::int64_t> ks = {1, 2, 4, 8};
  std::vector<BranchLoss> out;
  for (std::size_t i = 0; i < by_k.size(); ++i)
    for (std::size_t s = 0; s < by_k[i].size(); ++s)
      out.push_back({ks[i], static_cast<int>(s), by_k[i][s]});
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(measured_tolerance_is_two_stds_of_the_reference_branch_and_k_max_is_per_seed) {
  // k = 1: mean 1.0, sample std 0.1 -> tolerance 0.2, threshold 1.2.
  const auto losses = table({{1.0, 1.1, 0.9},
                             {1.1, 1.25, 1.0},   // in, out, in
                             {1.15, 1.0, 1.3},   // in, (after a miss), out
                             {1.5, 1.0, 1.0}});  // out, -, -
  const auto e = estimate_cbs(losses, {1, 2, 4, 8}, 3, -1.0);
  BOOST_TEST(std::abs(e.reference_loss - 1.0) < 1e-12);
  BOOST_TEST(std::abs(e.reference_std - 0.1) < 1e-12);
  BOOST_TEST(std::abs(e.tolerance - 0.2) < 1e-12);
  BOOST_TEST(e.tolerance_measured);
  // Seed 1 fails at k = 2, so its later k = 4 and 8 inside the tolerance do not count.
  BOOST_TEST((e.k_max_per_seed == std::vector<std::int64_t>{4, 1, 2}));
  BOOST_TEST(e.k_max == 2);  // the lower median
  BOOST_TEST(e.k_lo == 1);
  BOOST_TEST(e.k_hi == 4);
  BOOST_TEST(e.bound == "");
}

BOOST_AUTO_TEST_CASE(a_diverged_branch_is_outside_and_bounds_are_named) {
  // Given tolerance 0.05: every seed fails at k = 2 (one diverged: NaN) -> below.
  const auto below = estimate_cbs(table({{1.0, 1.0}, {1.2, kNaN}}), {1, 2}, 2, 0.05);
  BOOST_TEST(below.k_max == 1);
  BOOST_TEST(below.bound == "below");
  BOOST_TEST(!below.tolerance_measured);
  // Every k inside -> at least the largest.
  const auto above = estimate_cbs(table({{1.0, 1.0}, {1.0, 1.0}, {1.01, 1.0}, {1.02, 1.03}}),
                                  {1, 2, 4, 8}, 2, 0.05);
  BOOST_TEST(above.k_max == 8);
  BOOST_TEST(above.bound == "at_least");
}

BOOST_AUTO_TEST_CASE(one_seed_without_a_given_tolerance_is_unmeasured_not_zero) {
  const auto e = estimate_cbs(table({{1.0}, {1.0}}), {1, 2}, 1, -1.0);
  BOOST_TEST(e.bound == "unmeasured");
  BOOST_TEST(e.k_max == 0);
  BOOST_TEST(std::isnan(e.tolerance));
}
