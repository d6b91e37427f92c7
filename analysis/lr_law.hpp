// The LR-vs-batch law of a sweep's best LRs: a power law lr = c B^alpha, to compare
// with the linear (alpha = 1, Goyal et al. 2017) and square-root (alpha = 1/2) rules, and
// McCandlish et al.'s eps_opt(B) = eps_max / (1 + B_noise / B) (arXiv:1812.06162, eq. 2.6),
// which flattens at B >> B_noise. Both fitted in log lr, with percentile-bootstrap intervals
// that resample batch sizes and draw each best LR log-uniformly within its bracket (the LR
// search knows the optimum only between the best's neighbours).
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

struct LrPoint {
  double batch_size = 0.0;
  double lr = 0.0;  // the best LR found at this batch size
  // Its bracket: lr itself at both ends where one LR was tried; 0 below / HUGE_VAL above where
  // the best is the smallest / largest LR tried (the optimum lies beyond it).
  double lr_lo = 0.0, lr_hi = 0.0;
};

// A best LR with LRs tried on both sides of it: the optimum lies inside its bracket.
inline bool lr_bracketed(const LrPoint& p) {
  return p.lr_lo > 0 && p.lr_lo < p.lr && p.lr < p.lr_hi && p.lr_hi < HUGE_VAL;
}

// The points whose best LR a search measured: a bracket wider than the LR itself. Where one LR
// was tried at a batch size (sweep.lr_multipliers = [1.0]) the "best" is the scaling rule's LR
// given back, and a law fitted to those returns the rule to zero width (B^0.5 [0.5, 0.5]).
std::vector<LrPoint> searched_lr_points(const std::vector<LrPoint>& points);

struct PowerLaw {
  double alpha = 0.0, c = 0.0;  // lr = c B^alpha
};
// Least squares of log lr on log B. Needs >= 2 distinct batch sizes.
PowerLaw fit_power_law(const std::vector<LrPoint>& points);

struct NoiseLaw {
  double eps_max = 0.0, B_noise = 0.0;
  bool resolved = false;   // false: the best B_noise is at an edge of the search range
  bool unbounded = false;  // at the upper edge: no flattening seen (lr still grows like B)
};
// Least squares in log lr over B_noise (1-D search on a log grid, then golden section), eps_max
// in closed form for each B_noise.
NoiseLaw fit_noise_law(const std::vector<LrPoint>& points);

struct LrLawFit {
  PowerLaw power;
  NoiseLaw noise;
  Interval alpha, eps_max;
  // Empty where too few resamples fitted for any interval (min_resamples); then alpha's and
  // eps_max's are unset too.
  std::optional<Interval> B_noise;
  bool B_noise_upper_open = false;
  int resamples = 0;
};
LrLawFit fit_lr_law(const std::vector<LrPoint>& points, int resamples, double level,
                    std::uint64_t seed);

// The power law's LR at `batch` (past the points, where a plan extrapolates) with the
// percentile interval of the same bootstrap as fit_lr_law's; NaN ends below min_resamples. It
// holds the sampling of the best LRs, not the law's error past the data.
Interval power_law_lr_interval(const std::vector<LrPoint>& points, double batch, int resamples,
                               double level, std::uint64_t seed);

}  // namespace lbt::analysis
