// The adaptive batch's predicted and measured gain; see adaptive_gain.hpp.
#include "analysis/adaptive_gain.hpp"

#include <algorithm>
#include <cmath>

namespace lbt::analysis {
namespace {

bool usable(const TrajectoryPoint& p) {
  return std::isfinite(p.step) && std::isfinite(p.b_noise) && p.b_noise > 0.0 &&
         std::isfinite(p.batch) && p.batch > 0.0;
}

bool positive(double x) {
  return std::isfinite(x) && x > 0.0;
}

}  // namespace

// The integrals over progress s as sums: interval [step_i, step_j) between consecutive usable
// points has dS = step_j - step_i and ds = dS / (1 + B_noise_i / B_i) (eq. 2.7-2.11).
std::optional<double> predicted_gamma(std::span<const TrajectoryPoint> trajectory) {
  double s = 0.0, sqrt_sum = 0.0, noise_sum = 0.0;
  const TrajectoryPoint* prev = nullptr;
  for (const auto& p : trajectory) {
    if (!usable(p)) continue;
    if (prev && p.step > prev->step) {
      const double ds = (p.step - prev->step) / (1.0 + prev->b_noise / prev->batch);
      s += ds;
      sqrt_sum += ds * std::sqrt(prev->b_noise);
      noise_sum += ds * prev->b_noise;
    }
    prev = &p;
  }
  if (!(s > 0.0)) return std::nullopt;
  return sqrt_sum * sqrt_sum / (s * noise_sum);
}

MeasuredProduct measured_product(Bracket S, Bracket E, Bracket S_min, Bracket E_min) {
  MeasuredProduct p;
  if (!positive(S_min.value) || !positive(E_min.value)) {
    p.why = "the fixed-batch fit gave no finite S_min and E_min";
    return p;
  }
  if (S.value <= S_min.value || E.value <= E_min.value) {
    p.why =
        "the adaptive run took no more steps than S_min or no more examples than E_min (the "
        "per-step model does not hold there)";
    return p;
  }
  p.value = (S.value / S_min.value - 1.0) * (E.value / E_min.value - 1.0);
  // Lower: the fewest steps and examples against the largest S_min, E_min.
  const auto factor_lo = [](double x, double min_hi) {
    return positive(min_hi) ? std::max(0.0, x / min_hi - 1.0) : 0.0;
  };
  p.lo = factor_lo(S.lo, S_min.hi) * factor_lo(E.lo, E_min.hi);
  if (positive(S_min.lo) && positive(E_min.lo))
    p.hi = std::max(0.0, S.hi / S_min.lo - 1.0) * std::max(0.0, E.hi / E_min.lo - 1.0);
  return p;
}

}  // namespace lbt::analysis
