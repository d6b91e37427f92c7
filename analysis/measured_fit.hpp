// The critical-batch fit's uncertainty from what was measured: each batch size has
// several seeds, and each seed's steps-to-target is known only within its bracket
// (steps_lo, steps_hi]. A percentile bootstrap that can switch three sources on and off:
// batch sizes (resampled, as bootstrap_fits does: the scatter about the model), seeds
// (resampled within each batch size) and resolution (each seed's step drawn with its bracket's
// spread, centred on steps_hi as the point estimate reads it). All three together give the reported
// interval; each alone its component.
#pragma once
#include <cstdint>
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

struct BracketedSteps {
  double lo = 0.0, hi = 0.0;  // the target was not met at step lo and met at step hi
};

struct MeasuredPoint {
  double batch_size = 0.0;
  std::vector<BracketedSteps> seeds;  // one per seed that reached the target
};

// The median over seeds of steps_hi (Shallue et al.'s steps-to-result, seed by seed).
double median_steps(const MeasuredPoint& point);
std::vector<ScalingPoint> point_estimates(const std::vector<MeasuredPoint>& points);

struct BootstrapSources {
  bool batch_sizes = true, seeds = true, resolution = true;
};

// None where no fitted resample differs from the sweep itself: the bootstrap then measured no
// spread (3 batch sizes, one seed each, steps known to one step), and no interval is resolved.
std::vector<CriticalBatchFit> measurement_bootstrap_fits(const std::vector<MeasuredPoint>& points,
                                                         BootstrapSources sources, int resamples,
                                                         std::uint64_t seed);

// Each fitted quantity's percentile_interval (critical_batch.hpp) around `point`, the fit of
// the measurements themselves: every interval holds its estimate. No fits: NaN ends (no
// interval; null in fit.json). B_crit's and B_noise's upper end is +infinity (open: null in
// fit.json) where more than the tail's share of replicates lie above the sweep.
BootstrapIntervals intervals_of(const std::vector<CriticalBatchFit>& fits, double level,
                                const CriticalBatchFit& point);

}  // namespace lbt::analysis
