// The pure parts of lbt plan; see plan.hpp.
#include "analysis/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.hpp"

namespace lbt::analysis {
namespace {

std::string num(double x) {
  return plan_number(x);
}

// S(B) <= S: B >= B_noise / (S / S_min - 1); the smallest such B uses the fewest examples.
std::int64_t batch_for_max_steps(std::int64_t max_steps, const CriticalBatchFit& f) {
  if (static_cast<double>(max_steps) <= f.S_min) {
    throw ConfigError(
        "a step budget of " + std::to_string(max_steps) +
            " cannot reach the target: no batch size takes fewer than S_min = " + num(f.S_min) +
            " steps",
        "allow more than " + std::to_string(static_cast<std::int64_t>(std::ceil(f.S_min * 1.25))) +
            " steps (S_min x 1.25, at a batch of 4 B_crit)");
  }
  const double B = f.B_noise / (static_cast<double>(max_steps) / f.S_min - 1.0);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(B - 1e-9)));
}

// E(B) = E_min (1 + B / B_noise) <= E: the largest such B takes the fewest steps.
std::int64_t batch_for_max_examples(std::int64_t max_examples, const CriticalBatchFit& f) {
  if (static_cast<double>(max_examples) <= f.E_min) {
    throw ConfigError(
        "an example budget of " + std::to_string(max_examples) +
            " cannot reach the target: no batch size uses fewer than E_min = " + num(f.E_min) +
            " examples",
        "allow more than " + std::to_string(static_cast<std::int64_t>(std::ceil(f.E_min * 1.25))) +
            " examples (E_min x 1.25, at a batch of B_crit / 4)");
  }
  const double B = f.B_noise * (static_cast<double>(max_examples) / f.E_min - 1.0);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(B + 1e-9)));
}

}  // namespace

std::string plan_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::int64_t batch_for_budget(const PlanBudget& o, const CriticalBatchFit& f) {
  const int budgets = (o.workers > 0) + (o.max_steps > 0) + (o.max_examples > 0);
  if (budgets != 1) {
    throw ConfigError("a plan needs exactly one budget, got " + std::to_string(budgets),
                      "give workers with their micro-batch, or a step budget, or an example "
                      "budget");
  }
  if (o.workers > 0) {
    if (o.micro_batch <= 0) {
      throw ConfigError("a workers budget needs the micro-batch (examples per worker and step)",
                        "give both, e.g. 8 workers of 64 examples");
    }
    return o.workers * o.micro_batch;
  }
  if (o.max_steps > 0) return batch_for_max_steps(o.max_steps, f);
  return batch_for_max_examples(o.max_examples, f);
}

Prediction predict_at(std::int64_t B, const CriticalBatchFit& fit,
                      const std::vector<CriticalBatchFit>& replicates, double level) {
  const double Bd = static_cast<double>(B);
  std::vector<double> steps, examples;
  for (const auto& f : replicates) {
    // S_min (1 + B_noise / B) as S_min + E_min / B: a replicate above the sweep may hold
    // S_min = 0 and B_noise = inf, whose product is NaN.
    steps.push_back(f.S_min + f.E_min / Bd);
    examples.push_back(steps.back() * Bd);
  }
  Prediction p;
  p.steps = fit.S_min + fit.E_min / Bd;
  p.examples = p.steps * Bd;
  if (steps.empty()) {  // the bootstrap had nothing to vary: no interval (NaN ends)
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    p.steps_interval = p.examples_interval = {kNone, kNone};
    return p;
  }
  p.steps_interval = percentile_interval(steps, level, p.steps);
  p.examples_interval = percentile_interval(examples, level, p.examples);
  return p;
}

namespace {

// Why B is in `regime` of the fitted curve, in units of B_crit.
std::string regime_reason(Regime regime, double B, double B_crit) {
  // E(B) / E_min - 1 and S(B) / S_min - 1 on the fitted curve.
  const double extra_examples = B / B_crit, extra_steps = B_crit / B;
  const std::string where = "B is " + num(B / B_crit) + " x B_crit: ";
  switch (regime) {
    case Regime::kPerfectScaling:
      return where + "examples to target are within " + num(100 * extra_examples) +
             "% of E_min, so doubling B about halves the steps";
    case Regime::kMaximalDataParallelism:
      return where + "steps are within " + num(100 * extra_steps) +
             "% of S_min, so a larger batch buys almost no steps, only cost";
    case Regime::kDiminishingReturns:
      break;
  }
  return where + "steps are " + num(100 * extra_steps) + "% above S_min and examples " +
         num(100 * extra_examples) + "% above E_min";
}

}  // namespace

RegimeCall regime_at(std::int64_t B, double B_crit, double tolerance,
                     const std::vector<CriticalBatchFit>& replicates) {
  const double Bd = static_cast<double>(B);
  const Regime regime = regime_of(Bd, regime_edges(B_crit, tolerance));
  int agree = 0;
  for (const CriticalBatchFit& f : replicates)
    agree += regime_of(Bd, regime_edges(b_crit_or_infinity(f), tolerance)) == regime;
  const double agreement = replicates.empty() ? std::numeric_limits<double>::quiet_NaN()
                                              : agree / static_cast<double>(replicates.size());
  return {regime, regime_reason(regime, Bd, B_crit), agreement};
}

LrChoice lr_at(std::int64_t B, const std::vector<LrPoint>& reached, double rule_lr,
               const std::string& rule_source) {
  const std::vector<LrPoint> lr_points = searched_lr_points(reached);
  if (lr_points.size() < 3) return {rule_lr, rule_source};
  const double Bd = static_cast<double>(B);
  const PowerLaw law = fit_power_law(lr_points);
  const auto [lo, hi] = std::minmax_element(
      lr_points.begin(), lr_points.end(),
      [](const LrPoint& a, const LrPoint& b) { return a.batch_size < b.batch_size; });
  const bool outside = Bd < lo->batch_size || Bd > hi->batch_size;
  return {law.c * std::pow(Bd, law.alpha),
          "the sweep's LR law lr = " + num(law.c) + " x B^" + num(law.alpha) + " over " +
              std::to_string(lr_points.size()) + " batch sizes" +
              (outside ? " (extrapolated: B is outside the swept " + num(lo->batch_size) + ".." +
                             num(hi->batch_size) + ")"
                       : "")};
}

}  // namespace lbt::analysis
