// The regimes of data parallelism; see regimes.hpp.
#include "analysis/regimes.hpp"

#include <limits>

namespace lbt::analysis {

RegimeEdges regime_edges(double B_crit, double tolerance) {
  return {tolerance * B_crit, B_crit / tolerance};
}

Regime regime_of(double batch_size, const RegimeEdges& edges) {
  if (batch_size <= edges.perfect_max) return Regime::kPerfectScaling;
  if (batch_size >= edges.parallel_min) return Regime::kMaximalDataParallelism;
  return Regime::kDiminishingReturns;
}

double regime_agreement(double batch_size, Regime regime, double tolerance,
                        const std::vector<CriticalBatchFit>& fits, double level) {
  if (fits.size() < min_resamples(level)) return std::numeric_limits<double>::quiet_NaN();
  int agree = 0;
  for (const CriticalBatchFit& f : fits)
    agree += regime_of(batch_size, regime_edges(b_crit_or_infinity(f), tolerance)) == regime;
  return agree / static_cast<double>(fits.size());
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
