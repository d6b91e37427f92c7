// The critical batch from branch losses; see cbs_estimate.hpp.
#include "experiments/cbs/cbs_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lbt::experiments {
namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

const BranchLoss* branch_of(const std::vector<BranchLoss>& losses, std::int64_t k, int seed) {
  for (const BranchLoss& l : losses)
    if (l.multiplier == k && l.seed_index == seed) return &l;
  return nullptr;  // not run (yet)
}

double loss_of(const std::vector<BranchLoss>& losses, std::int64_t k, int seed) {
  const BranchLoss* l = branch_of(losses, k, seed);
  return l ? l->loss : kUnmeasured;
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
    const BranchLoss* b = branch_of(losses, k, seed);
    if (!b || !b->measured) return 0;  // the reading needs this branch: none for the seed
    // Monotone reading: the first k outside the tolerance ends the search, so a lucky larger k
    // after one outside does not count.
    if (!(std::isfinite(b->loss) && b->loss <= reference_loss + tolerance)) break;
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
  std::vector<std::int64_t> sorted;  // the seeds with a reading
  for (int s = 0; s < seeds; ++s) {
    const std::int64_t k = k_max_of_seed(losses, multipliers, s, e.reference_loss, e.tolerance);
    e.k_max_per_seed.push_back(k);
    if (k > 0) sorted.push_back(k);
  }
  if (sorted.empty()) {
    e.bound = "unmeasured";
    return e;
  }
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
