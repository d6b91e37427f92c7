// lbt cbs's estimate from branch losses (experiments/cbs/cbs_estimate.hpp), against values
// worked out by hand from Merrill et al. 2025's rule: the largest k whose loss stays within the
// tolerance of the reference (k = 1) branch's mean loss.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "cbs_support.hpp"
#include "experiments/cbs/branch_length.hpp"
#include "experiments/cbs/cbs_estimate.hpp"
#include "experiments/cbs/cbs_files.hpp"
#include "experiments/cbs/cbs_plan.hpp"

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
  BOOST_TEST(e.k_upper == 8);  // seed 0's reading 4 says CBS < 8 B
  BOOST_TEST(e.bound == "");
}

BOOST_AUTO_TEST_CASE(a_diverged_branch_is_outside_and_bounds_are_named) {
  // Given tolerance 0.05: every seed fails at k = 2 (one diverged: NaN) -> below.
  const auto below = estimate_cbs(table({{1.0, 1.0}, {1.2, kNaN}}), {1, 2}, 2, 0.05);
  BOOST_TEST(below.k_max == 1);
  BOOST_TEST(below.bound == "below");
  BOOST_TEST(below.k_upper == 2);  // CBS < 2 B: the interval [B, 2B], not [B, B]
  BOOST_TEST(!below.tolerance_measured);
  // Every k inside -> at least the largest.
  const auto above = estimate_cbs(table({{1.0, 1.0}, {1.0, 1.0}, {1.01, 1.0}, {1.02, 1.03}}),
                                  {1, 2, 4, 8}, 2, 0.05);
  BOOST_TEST(above.k_max == 8);
  BOOST_TEST(above.bound == "at_least");
  BOOST_TEST(above.k_upper == 0);  // at least 8 B: open above
}

// A failed branch measured nothing: its seed gives no reading (it read as outside, so a crash
// at k = 2 made the CBS "below 2 B"); a diverged one is outside, as before.
BOOST_AUTO_TEST_CASE(a_failed_branch_leaves_its_seed_without_a_reading) {
  auto losses = table({{1.0, 1.0, 1.0}, {kNaN, kNaN, 1.0}, {1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}});
  losses[3].measured = losses[4].measured = false;  // k = 2 of seeds 0 and 1 failed
  const auto e = estimate_cbs(losses, {1, 2, 4, 8}, 3, 0.05);
  BOOST_TEST((e.k_max_per_seed == std::vector<std::int64_t>{0, 0, 8}));
  BOOST_TEST(e.k_max == 8);
  BOOST_TEST(e.bound == "at_least");
  losses[5].measured = false;  // every seed's k = 2: nothing measured
  BOOST_TEST(estimate_cbs(losses, {1, 2, 4, 8}, 3, 0.05).bound == "unmeasured");
  losses[3].measured = true;  // seed 0's k = 2 diverged: outside
  BOOST_TEST(estimate_cbs(losses, {1, 2, 4, 8}, 3, 0.05).k_max_per_seed[0] == 1);
}

BOOST_AUTO_TEST_CASE(one_seed_without_a_given_tolerance_is_unmeasured_not_zero) {
  const auto e = estimate_cbs(table({{1.0}, {1.0}}), {1, 2}, 1, -1.0);
  BOOST_TEST(e.bound == "unmeasured");
  BOOST_TEST(e.k_max == 0);
  BOOST_TEST(std::isnan(e.tolerance));
}

// The branch length from the reference's loss noise (experiments/cbs/branch_length.hpp). The
// curves are a line plus residuals (+a, -a, -a, +a) repeated, which sum to zero against 1 and
// against the examples over each group of four, so the least-squares line is the line itself
// and the residuals' standard deviation on n - 2 degrees of freedom is a sqrt(n / (n - 2)).
BOOST_AUTO_TEST_SUITE(branch_length)

using lbt::experiments::EvalPoint;
using lbt::experiments::measured_branch_length;

// 16 evaluations every 1000 examples from `from`: val_loss = 2 - slope x (e - from) + r.
std::vector<EvalPoint> curve(std::int64_t from, double slope, double a) {
  const double pattern[4] = {a, -a, -a, a};
  std::vector<EvalPoint> points;
  for (int i = 0; i < 16; ++i) {
    const std::int64_t e = from + 1000 * i;
    points.push_back({e, 2.0 - slope * 1000.0 * i + pattern[i % 4]});
  }
  return points;
}

BOOST_AUTO_TEST_CASE(the_branch_falls_four_noise_deviations_in_whole_steps) {
  // noise 0.01 sqrt(16/14) = 0.0106904; 4 x noise / 1e-5 = 4276.15 examples = 16.7 steps at
  // 256: 17 steps, 4352 examples (the floor is 8 steps, 2048; the cap 64 steps, 16384).
  const auto b = measured_branch_length(curve(5000, 1e-5, 0.01), 5000, 256);
  BOOST_TEST(b.evaluations == 16);
  BOOST_TEST(b.fall_per_example == 1e-5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(b.noise == 0.01 * std::sqrt(16.0 / 14.0), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(b.examples == 17 * 256);
}

BOOST_AUTO_TEST_CASE(quiet_curves_take_the_floor_and_noisy_ones_the_cap) {
  // 4 x 0.0001 x 1.069 / 1e-5 = 42.8 examples: the floor, 8 x 256.
  BOOST_TEST(measured_branch_length(curve(0, 1e-5, 0.0001), 0, 256).examples == 8 * 256);
  // 4 x 0.5 x 1.069 / 1e-5 = 213,809 examples: the cap, 64 x 256.
  const auto capped = measured_branch_length(curve(0, 1e-5, 0.5), 0, 256);
  BOOST_TEST(capped.examples == 64 * 256);
  BOOST_TEST(capped.rule.find("capped") != std::string::npos, capped.rule);
}

BOOST_AUTO_TEST_CASE(a_loss_that_does_not_fall_or_too_few_evaluations_take_the_floor) {
  const auto flat = measured_branch_length(curve(0, 0.0, 0.01), 0, 256);
  BOOST_TEST(flat.examples == 8 * 256);
  BOOST_TEST(flat.rule.find("does not fall") != std::string::npos, flat.rule);
  // Three evaluations within the cap's 16384 examples on either side of the checkpoint.
  std::vector<EvalPoint> sparse = {{0, 2.0}, {10000, 1.9}, {20000, 1.8}, {40000, 1.7}};
  const auto few = measured_branch_length(sparse, 10000, 256);
  BOOST_TEST(few.evaluations == 3);
  BOOST_TEST(few.examples == 8 * 256);
  BOOST_TEST(few.rule.find("fewer than 4") != std::string::npos, few.rule);
}

// Evaluations after the checkpoint are the reference branch's own data; only where fewer than
// four lie within the cap does the line reach back before it.
BOOST_AUTO_TEST_CASE(the_line_runs_through_the_evaluations_after_the_checkpoint) {
  std::vector<EvalPoint> points = curve(20000, 1e-5, 0.01);
  // Before the checkpoint the loss fell ten times faster: not read while 16 points follow.
  for (int i = 1; i <= 4; ++i) points.insert(points.begin(), {20000 - 1000 * i, 2.0 + 0.1 * i});
  const auto b = measured_branch_length(points, 20000, 256);
  BOOST_TEST(b.evaluations == 16);
  BOOST_TEST(b.fall_per_example == 1e-5, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_SUITE_END()

// cbs.csv's val_loss_kK is the mean over seeds: empty where a seed's branch has no loss (it
// averaged the seeds that completed, and read as the mean over all; 2026-11-29 audit).
BOOST_AUTO_TEST_CASE(the_csv_mean_over_seeds_is_empty_where_a_seed_diverged) {
  using lbt::experiments::BranchResult;
  lbt::experiments::CbsPoint p;
  p.step = 50;
  p.batch = 64;
  const auto branch = [](std::int64_t k, int seed, double loss) {
    BranchResult r;
    r.branch.multiplier = k;
    r.branch.seed_index = seed;
    r.status = std::isfinite(loss) ? "completed" : "diverged";
    r.loss = loss;
    return r;
  };
  p.branches = {branch(1, 0, 0.5), branch(1, 1, 0.7), branch(2, 0, 0.6), branch(2, 1, kNaN)};
  const auto csv = lbt::test::scratch() / "mean_over_seeds.csv";
  lbt::experiments::write_cbs_csv(csv, {"ref", {1, 2}, 2, "linear", -1.0}, {p});
  const std::string row = lbt::test::lines_starting(lbt::test::slurp(csv), "50,64,").at(0);
  BOOST_TEST(row.substr(row.size() - 5) == ",0.6,", row);  // k = 1: (0.5 + 0.7) / 2; k = 2: none
}

// Branches train a whole number of steps at every multiplier: the least common multiple of the
// multipliers, 0 past 64 steps at the largest (a measured length's longest branch).
BOOST_AUTO_TEST_CASE(the_steps_in_common_are_the_multipliers_least_common_multiple) {
  using lbt::experiments::steps_in_common;
  BOOST_TEST(steps_in_common({1, 2, 4, 8, 16}) == 16);
  BOOST_TEST(steps_in_common({1, 3, 4}) == 12);
  BOOST_TEST(steps_in_common({2, 3, 5, 7}) == 210);    // 64 x 7 = 448 allows it
  BOOST_TEST(steps_in_common({1, 3, 5, 7, 11}) == 0);  // 1155 > 64 x 11
}
