// The adaptive LR search (experiments/sweep/lr_search.hpp) driven by a stand-in trial: steps to the
// target as a known function of the LR with its minimum at lr*, divergence above 8 lr*, the
// budget's end far from it. The search must end within its refinement ratio of lr* (also when
// lr* lies outside the starting grid), pruning must never change the winner, and equal steps
// must pick the same winner whatever else differs.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "experiments/sweep/lr_search.hpp"

using lbt::experiments::best_point;
using lbt::experiments::LrSearchOptions;
using lbt::experiments::next_lr_trials;
using lbt::experiments::SearchPoint;

BOOST_AUTO_TEST_SUITE(lr_search)

namespace {

// Steps to the target at multiplier m: a parabola in log m around lr*, as measured curves look.
struct StandIn {
  double lr_star;
  double min_steps = 1000.0, budget = 20000.0;
  SearchPoint run(double m, std::int64_t prune_at_step) const {
    if (m > 8.0 * lr_star) return {m, "diverged", -1};
    const double d = std::log(m / lr_star);
    const auto steps = static_cast<std::int64_t>(std::ceil(min_steps * (1.0 + 0.7 * d * d)));
    if (steps > budget) return {m, "budget_exhausted", -1};
    if (prune_at_step > 0 && steps > prune_at_step) return {m, "pruned", -1};
    return {m, "reached_target", steps};
  }
};

struct SearchRun {
  std::vector<SearchPoint> points;
  int rounds = 0;
};

SearchRun search(const StandIn& f, std::vector<double> grid, const LrSearchOptions& o) {
  SearchRun r;
  for (double m : grid) r.points.push_back(f.run(m, 0));
  for (;;) {
    const auto next = next_lr_trials(r.points, o);
    if (next.multipliers.empty()) break;
    ++r.rounds;
    for (double m : next.multipliers) r.points.push_back(f.run(m, next.prune_at_step));
  }
  return r;
}

const std::vector<double> kGrid = {0.1, 0.3, 1.0, 3.0};

}  // namespace

BOOST_AUTO_TEST_CASE(
    search_ends_within_the_refinement_ratio_of_the_optimum_inside_and_outside_the_grid) {
  for (double lr_star : {0.5, 1.7, 0.013, 40.0}) {
    LrSearchOptions o;
    o.max_trials = 30;
    const SearchRun r = search(StandIn{lr_star}, kGrid, o);
    const int b = best_point(r.points);
    BOOST_TEST_REQUIRE(b >= 0);
    const double best = r.points[b].multiplier;
    BOOST_TEST_CONTEXT("lr* = " << lr_star << ", best " << best << " after " << r.points.size()
                                << " trials") {
      BOOST_TEST(std::abs(std::log(best / lr_star)) <= std::log(o.refine_ratio) + 1e-12);
      // The best is interior: a tried LR on each side, each within the ratio.
      double below = 0.0, above = INFINITY;
      for (const auto& p : r.points) {
        if (p.multiplier < best) below = std::max(below, p.multiplier);
        if (p.multiplier > best) above = std::min(above, p.multiplier);
      }
      BOOST_TEST(best / below <= o.refine_ratio * (1 + 1e-12));
      BOOST_TEST(above / best <= o.refine_ratio * (1 + 1e-12));
    }
  }
}

BOOST_AUTO_TEST_CASE(pruning_never_changes_the_winner) {
  for (double lr_star : {0.5, 1.7, 0.013, 40.0, 0.1, 3.0}) {
    LrSearchOptions pruned, full;
    pruned.max_trials = full.max_trials = 30;
    full.prune = false;
    const SearchRun a = search(StandIn{lr_star}, kGrid, pruned);
    const SearchRun b = search(StandIn{lr_star}, kGrid, full);
    const auto& wa = a.points[best_point(a.points)];
    const auto& wb = b.points[best_point(b.points)];
    BOOST_TEST(wa.multiplier == wb.multiplier, "lr* = " << lr_star);
    BOOST_TEST(wa.steps_to_target == wb.steps_to_target);
    int pruned_trials = 0;
    for (const auto& p : a.points) pruned_trials += p.status == "pruned";
    BOOST_TEST_MESSAGE("lr* = " << lr_star << ": " << pruned_trials << " of " << a.points.size()
                                << " trials pruned");
  }
}

BOOST_AUTO_TEST_CASE(equal_steps_go_to_the_smaller_lr_in_any_order) {
  const std::vector<SearchPoint> points = {
      {2.0, "reached_target", 100}, {0.5, "reached_target", 100}, {1.0, "reached_target", 120}};
  BOOST_TEST(points[best_point(points)].multiplier == 0.5);
  const std::vector<SearchPoint> reversed(points.rbegin(), points.rend());
  BOOST_TEST(reversed[best_point(reversed)].multiplier == 0.5);
}

BOOST_AUTO_TEST_CASE(no_trial_reached_steps_toward_where_one_might) {
  LrSearchOptions o;
  auto next = next_lr_trials({{1.0, "diverged", -1}, {3.0, "diverged", -1}}, o);
  BOOST_TEST_REQUIRE(next.multipliers.size() == 1u);
  BOOST_TEST(next.multipliers[0] < 1.0);
  next = next_lr_trials({{1.0, "budget_exhausted", -1}, {3.0, "budget_exhausted", -1}}, o);
  BOOST_TEST_REQUIRE(next.multipliers.size() == 1u);
  BOOST_TEST(next.multipliers[0] > 3.0);
  next = next_lr_trials({{1.0, "budget_exhausted", -1}, {4.0, "diverged", -1}}, o);
  BOOST_TEST_REQUIRE(next.multipliers.size() == 1u);
  BOOST_TEST(next.multipliers[0] == 2.0, boost::test_tools::tolerance(1e-12));
  next = next_lr_trials({{1.0, "failed", -1}, {4.0, "reached_target", 10}}, o);
  BOOST_TEST(next.multipliers.empty());  // a crash is not a finding about the LR
  o.max_trials = 2;
  next = next_lr_trials({{1.0, "budget_exhausted", -1}, {4.0, "diverged", -1}}, o);
  BOOST_TEST(next.multipliers.empty());
  BOOST_TEST(next.why.find("lr_max_trials") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
