// The critical batch from branch losses; see cbs_estimate.hpp.
#include "experiments/cbs/cbs_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lbt::experiments {
namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

double loss_of(const std::vector<BranchLoss>& losses, std::int64_t k, int seed) {
  for (const BranchLoss& l : losses)
    if (l.multiplier == k && l.seed_index == seed) return l.loss;
  return kUnmeasured;  // not run (yet): outside, like a failed branch
}

// The finite k = 1 losses over seeds.
std::vector<double> reference_losses(const std::vector<BranchLoss>& losses, int seeds) {
  std::vector<double> out;
  for (int s = 0; s < seeds; ++s)
    if (const double l = loss_of(losses, 1, s); std::isfinite(l)) out.push_back(l);
  return out;
}

double mean(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return v.empty() ? kUnmeasured : sum / static_cast<double>(v.size());
}

double sample_std(const std::vector<double>& v) {
  if (v.size() < 2) return kUnmeasured;
  const double m = mean(v);
  double ss = 0.0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

std::string bound_of(std::int64_t k_max, const std::vector<std::int64_t>& multipliers) {
  if (k_max == 1) return "below";
  if (k_max == multipliers.back()) return "at_least";
  return "";
}

}  // namespace

std::int64_t k_max_of_seed(const std::vector<BranchLoss>& losses,
                           const std::vector<std::int64_t>& multipliers, int seed,
                           double reference_loss, double tolerance) {
  std::int64_t k_max = 1;
  for (std::int64_t k : multipliers) {
    if (k == 1) continue;
    const double l = loss_of(losses, k, seed);
    // Monotone reading: the first k outside the tolerance ends the search, so a lucky larger k
    // after a failed one does not count.
    if (!(std::isfinite(l) && l <= reference_loss + tolerance)) break;
    k_max = k;
  }
  return k_max;
}

CbsEstimate estimate_cbs(const std::vector<BranchLoss>& losses,
                         const std::vector<std::int64_t>& multipliers, int seeds,
                         double tolerance) {
  CbsEstimate e;
  const std::vector<double> refs = reference_losses(losses, seeds);
  e.reference_loss = mean(refs);
  e.reference_std = sample_std(refs);
  e.tolerance_measured = tolerance < 0;
  e.tolerance = e.tolerance_measured ? kToleranceStds * e.reference_std : tolerance;
  if (!std::isfinite(e.reference_loss) || !std::isfinite(e.tolerance)) {
    e.bound = "unmeasured";
    return e;
  }
  for (int s = 0; s < seeds; ++s)
    e.k_max_per_seed.push_back(
        k_max_of_seed(losses, multipliers, s, e.reference_loss, e.tolerance));
  std::vector<std::int64_t> sorted = e.k_max_per_seed;
  std::sort(sorted.begin(), sorted.end());
  e.k_max = sorted[(sorted.size() - 1) / 2];  // the lower median: one of the seeds' values
  e.k_lo = sorted.front();
  e.k_hi = sorted.back();
  const auto next = std::upper_bound(multipliers.begin(), multipliers.end(), e.k_hi);
  e.k_upper = next == multipliers.end() ? 0 : *next;
  e.bound = bound_of(e.k_max, multipliers);
  return e;
}

}  // namespace lbt::experiments
