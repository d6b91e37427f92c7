// Critical batch size from steps-to-result: fits S(B) = S_min (1 + B_noise / B), i.e.
// (S/S_min - 1)(E/E_min - 1) = 1 with E = S B, E_min = S_min B_noise, B_crit = E_min / S_min
// (McCandlish et al. 2018, arXiv:1812.06162, eq. 2.11; regimes after Shallue et al. 2018,
// arXiv:1811.03600, sec. 4). Pure math over (B, S) pairs; depends on core only.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace lbt::analysis {

struct ScalingPoint {
  double batch_size = 0.0;  // B
  double steps = 0.0;       // S: steps to reach the target at B (best over the LR search)
};

// How many distinct batch sizes `points` hold (ScalingPoint, LrPoint: anything with batch_size);
// the fits need 2 or 3 of them.
template <class Point>
std::size_t distinct_batch_sizes(const std::vector<Point>& points) {
  std::set<double> sizes;
  for (const auto& p : points) sizes.insert(p.batch_size);
  return sizes.size();
}

struct CriticalBatchFit {
  double S_min = 0.0, B_noise = 0.0;  // model parameters
  double E_min = 0.0, B_crit = 0.0;   // E_min = S_min * B_noise; B_crit = E_min / S_min
  double rms_log_residual = 0.0;      // sqrt(mean (log S - log S_fit)^2)
  // False where the best fit has B_noise = 0, or below 1/kSweepReach of the smallest batch size:
  // the steps do not fall as the batch grows, so the data show no critical batch (E_min and
  // B_crit are then 0 only as the model's boundary, not a measurement; reports give them as
  // null with a warning).
  bool resolved = true;
  // True where B_crit lies past kSweepReach times the largest batch size fitted: the steps fall
  // as 1/B at every batch size (perfect scaling throughout), S_min is not told apart from 0 and
  // B_crit is bounded only below (reports give it as null, its interval open above).
  bool above_sweep = false;
  // B_crit is a measurement: the steps fall with the batch, and the knee lies within reach.
  bool b_crit_measured() const { return resolved && !above_sweep; }
};

// How far past the largest batch size swept a fit can place B_crit. At B_crit = 100 B_max the
// steps at B_max lie 1% above perfect scaling (S B / E_min = 1 + B / B_crit), less than
// steps-to-target's seed noise and evaluation resolution: the data cannot tell such a B_crit
// from any larger one (lr_law.hpp bounds its B_noise search the same way).
inline constexpr double kSweepReach = 100.0;

// Where a measured B_crit lies outside the batch sizes of `points` (within the fit's reach,
// kSweepReach either way), the model's knee is extrapolated: "below" or "above"; else nullptr
// (inside, or not measured). fit.json's and Python's b_crit_extrapolated.
const char* b_crit_extrapolated(const std::vector<ScalingPoint>& points,
                                const CriticalBatchFit& fit);

// B_crit as intervals count it: +infinity where the fit puts it above the sweep, so that a
// replicate with S_min ~ 1e-23 (B_crit ~ 1e26) opens the interval rather than bounding it.
inline double b_crit_or_infinity(const CriticalBatchFit& f) {
  return f.above_sweep ? HUGE_VAL : f.B_crit;
}

// The words reports use for an unresolved fit.
inline constexpr const char* kNoCriticalBatch =
    "the steps to the target do not fall as the batch grows: the data show no critical batch "
    "(E_min and B_crit unresolved); sweep smaller batch sizes, or check the target and the LR "
    "search";
// ... and for a fit above the sweep.
inline constexpr const char* kCriticalBatchAboveSweep =
    "the steps to the target fall as 1/B at every batch size swept (perfect scaling "
    "throughout): B_crit lies past 100x the largest, beyond what this sweep measures (B_crit "
    "unresolved, its interval open above); sweep larger batch sizes";

// Least squares in log space: minimises sum_i (log S_i - log(S_min + S_min B_noise / B_i))^2.
// Steps-to-result scatter is multiplicative (eval granularity and seed noise scale with S)
// and S spans orders of magnitude, so an unweighted fit of S against 1/B would be decided by
// the smallest batches alone. The model is linear in 1/B (S = a + b/B, a = S_min,
// b = S_min B_noise); the start is the closed-form fit of that line with relative (1/S^2)
// weights, then Gauss-Newton in log space with a >= 0, b >= 0 kept by projection, also started
// from the optimum on each edge of that domain (b = 0, a -> 0): the least loss of the three.
// Throws lbt::Error for fewer than 3 distinct batch sizes or non-positive values.
CriticalBatchFit fit_critical_batch(const std::vector<ScalingPoint>& points);

struct Interval {
  double lo = 0.0, hi = 0.0;
};

struct BootstrapIntervals {
  Interval S_min, B_noise, E_min, B_crit;
  int resamples = 0;  // resamples that gave a fit (those with < 2 distinct batch sizes skipped)
};

// The percentile interval of bootstrap `values`, the (1 - level) / 2 and (1 + level) / 2
// quantiles, extended where needed to hold `estimate`: a replicate distribution that falls
// wholly on one side of the estimate (few distinct resamples) must not report an interval
// that excludes it. Every fitted critical-batch quantity is >= 0, and so are both ends (the LR
// law's alpha, which may be negative, uses it too). No interval (NaN ends) from fewer than
// min_resamples(level) values: a 95% interval from 5 replicates is their range, not 95%.
Interval percentile_interval(const std::vector<double>& values, double level, double estimate);
// The fewest bootstrap replicates whose percentile interval at `level` has one replicate in
// each tail: 2 / (1 - level), 40 at 95%.
std::size_t min_resamples(double level);
// The most bootstrap resamples lbt draws: each is a refit (about 0.2 ms for a sweep's fit and
// its components, 200 bytes kept), so 1e5 is 20 s; 2e9, which an int allowed, was days and
// hundreds of GB, ending in std::bad_alloc. Monte-Carlo error at 2000 is already ~5% of a width.
inline constexpr int kMaxResamples = 100000;
// The q-quantile of `values` (linear interpolation between order statistics; +infinity
// where it interpolates towards an infinite one).
double quantile(std::vector<double> values, double q);
// The median of `values` (the mean of the middle two for an even count); needs >= 1 value.
double median(std::vector<double> values);

// Percentile bootstrap over batch sizes: draw n points with replacement, refit, take the
// (1-level)/2 and (1+level)/2 quantiles of each quantity. The measurement bootstrap's rules
// (measured_fit.hpp) with each point one exact seed: a resample with fewer than 3 distinct
// batch sizes fits nothing, and none where no resample differs from `points` (as lbt fit).
BootstrapIntervals bootstrap_critical_batch(const std::vector<ScalingPoint>& points,
                                            int resamples = 2000, double level = 0.95,
                                            std::uint64_t seed = 0);

}  // namespace lbt::analysis
