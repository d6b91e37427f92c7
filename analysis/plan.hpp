// The pure parts of `lbt plan` (experiments/sweep/scale_plan.hpp reads the sweep and writes the
// config): the global batch a budget allows on the fitted curve S(B) = S_min (1 + B_noise / B)
// (McCandlish et al. 2018, eq. 2.11), the steps and examples predicted there with bootstrap
// intervals, the regime (Shallue et al. 2018, sec. 4) and the LR from the sweep's LR law.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/critical_batch.hpp"
#include "analysis/lr_law.hpp"
#include "analysis/measured_fit.hpp"
#include "analysis/regimes.hpp"

namespace lbt::analysis {

// Exactly one budget: workers with their micro-batch, or max steps, or max examples.
struct PlanBudget {
  int workers = 0;
  std::int64_t micro_batch = 0;
  std::int64_t max_steps = 0;
  std::int64_t max_examples = 0;
};

// The global batch the budget allows on the fit: workers x micro-batch; the smallest batch that
// reaches the target within max_steps (fewest examples); the largest within max_examples
// (fewest steps). Throws ConfigError for no or several budgets, or one that cannot reach the
// target (naming the smallest that can).
std::int64_t batch_for_budget(const PlanBudget& budget, const CriticalBatchFit& fit);

// Steps and examples to the target at batch B: the point fit's, with percentile intervals over
// `replicates`, lbt fit's bootstrap fits of the sweep (measurement_bootstrap_fits: batch sizes,
// seeds and each seed's bracket).
struct Prediction {
  double steps = 0.0, examples = 0.0;
  Interval steps_interval, examples_interval;  // NaN ends: no interval resolved
};
Prediction predict_at(std::int64_t B, const CriticalBatchFit& fit,
                      const std::vector<CriticalBatchFit>& replicates, double level);

// The regime at B and a sentence saying why, in units of B_crit, each ratio with its percentile
// interval over `replicates` (as predict_at's); with how sure the call is (regime_agreement).
struct RegimeCall {
  Regime regime;
  std::string why;
  double agreement = 0.0;
  double b_over_b_crit = 0.0;
  Interval b_over_b_crit_interval;  // NaN ends: none; hi +inf: B_crit's interval reaches 0
};
RegimeCall regime_at(std::int64_t B, double B_crit, double tolerance,
                     const std::vector<CriticalBatchFit>& replicates, double level);

// The peak LR at B and where it came from, where at least 3 batch sizes reached the target with
// a searched LR (searched_lr_points): inside the swept batches, the sweep's best LRs (at a swept
// B its own, with its search bracket; between two, on a log-log line through theirs); outside,
// the LR law lr = c B^alpha extrapolated (no interval). Else `rule_lr` (`rule_source`).
struct LrChoice {
  double lr = 0.0;
  double lo = 0.0, hi = 0.0;  // the search's bracket (NaN: none)
  std::string source;
};
LrChoice lr_at(std::int64_t B, const std::vector<LrPoint>& lr_points, double rule_lr,
               const std::string& rule_source);

// "%.4g" of x: the plan's numbers in text.
std::string plan_number(double x);

}  // namespace lbt::analysis
