// Shallue et al. 2018 (arXiv:1811.03600, sec. 4)'s three regimes of data parallelism, placed on
// the fitted curve S(B) = S_min (1 + B_crit / B): perfect scaling while examples stay within
// (1 + tolerance) E_min, i.e. B <= tolerance * B_crit; maximal data parallelism once steps stay
// within (1 + tolerance) S_min, i.e. B >= B_crit / tolerance; diminishing returns in between.
// One place for the edges, shared by `lbt fit` (regimes as ranges) and `lbt plan` (a regime).
#pragma once
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

enum class Regime { kPerfectScaling, kDiminishingReturns, kMaximalDataParallelism };

struct RegimeEdges {
  double perfect_max = 0.0;   // B <= perfect_max: perfect scaling
  double parallel_min = 0.0;  // B >= parallel_min: maximal data parallelism
};

RegimeEdges regime_edges(double B_crit, double tolerance);

Regime regime_of(double batch_size, const RegimeEdges& edges);

// How sure a regime call at `batch_size` is: the share of bootstrap `fits` (B_crit infinite
// above the sweep) that put it in `regime` too; NaN from fewer than min_resamples(level) fits. A
// regime is a category, so its uncertainty is that share rather than an interval.
double regime_agreement(double batch_size, Regime regime, double tolerance,
                        const std::vector<CriticalBatchFit>& fits, double level);

// fit.json's and plan.json's name: "perfect_scaling", "diminishing_returns",
// "maximal_data_parallelism".
const char* regime_name(Regime regime);

}  // namespace lbt::analysis
