// The regimes of data parallelism; see regimes.hpp.
#include "analysis/regimes.hpp"

namespace lbt::analysis {

RegimeEdges regime_edges(double B_crit, double tolerance) {
  return {tolerance * B_crit, B_crit / tolerance};
}

Regime regime_of(double batch_size, const RegimeEdges& edges) {
  if (batch_size <= edges.perfect_max) return Regime::kPerfectScaling;
  if (batch_size >= edges.parallel_min) return Regime::kMaximalDataParallelism;
  return Regime::kDiminishingReturns;
}

const char* regime_name(Regime regime) {
  switch (regime) {
    case Regime::kPerfectScaling:
      return "perfect_scaling";
    case Regime::kMaximalDataParallelism:
      return "maximal_data_parallelism";
    case Regime::kDiminishingReturns:
      break;
  }
  return "diminishing_returns";
}

}  // namespace lbt::analysis
