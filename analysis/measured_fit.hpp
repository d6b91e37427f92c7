// The critical-batch fit's uncertainty from what was measured: each batch size has
// several seeds, and each seed's steps-to-target is known only within its bracket
// (steps_lo, steps_hi]. A percentile bootstrap that can switch three sources on and off:
// batch sizes (resampled, as bootstrap_fits does: the scatter about the model), seeds
// (resampled within each batch size) and resolution (each seed's step drawn with its bracket's
// spread, centred on steps_hi as the point estimate reads it). All three together give the reported
// interval; each alone its component.
#pragma once
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

struct BracketedSteps {
  double lo = 0.0, hi = 0.0;  // the target was not met at step lo and met at step hi
  // hi = +infinity: the seed had not met the target by step lo when its run ended (its budget,
  // a prune, or the run stopping at the sweep's own reading): its steps-to-target lie above lo,
  // censored; lo is +infinity too where it never can (diverged).
  bool censored() const { return !std::isfinite(hi); }
};

// One seed's steps-to-target with its bracket's spread, as the measurement bootstrap draws it:
// uniform over the bracket's whole steps shifted to centre on steps_hi (for (lo, hi] of width w
// > 1: hi - (w - 1) / 2 + k, k = 0 .. w - 1); a censored seed or a bracket of one step, hi.
double draw_in_bracket(const BracketedSteps& b, std::mt19937_64& rng);

struct MeasuredPoint {
  double batch_size = 0.0;
  std::vector<BracketedSteps> seeds;  // the best LR's seeds, censored ones included
  // ... and those that failed or timed out: they measured nothing and are not in `seeds`, so
  // the median is the others' (fit.json names them: it was silent, 2026-11-29 audit).
  int seeds_unmeasured = 0;
};

// The median over seeds of steps_hi (Shallue et al.'s steps-to-result, seed by seed), where
// the censored seeds leave it known: the same wherever above its lo each would have met the
// target (1 censored of 3 seeds, above the other two's steps); NaN where it is not (1 of 3
// reached: the median is only bounded below). Dropping the censored seeds instead read the
// median of those that did, biased low: the first_passage reading of the main job's sweep
// (2026-11-29 audit: B = 16, 32, 128 from 1 seed of 3; B_crit 707, where >= 820).
double median_steps(const MeasuredPoint& point);
// The lower bound a censored median has: each censored seed at its lo.
double median_steps_at_least(const MeasuredPoint& point);
std::vector<ScalingPoint> point_estimates(const std::vector<MeasuredPoint>& points);

// A batch size left out of a fit because its median over seeds is censored (median_steps).
struct CensoredPoint {
  double batch_size = 0.0;
  double steps_at_least = 0.0;  // median_steps_at_least
  std::size_t seeds = 0, seeds_reached = 0;
};
// Removes from `points` those whose median is censored, and returns them.
std::vector<CensoredPoint> leave_out_censored(std::vector<MeasuredPoint>& points);

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

// fit.json's batch_sizes_censored: each left-out batch size, its median's lower bound
// (steps_at_least) and how many of its seeds reached the target.
nlohmann::json censored_json(const std::vector<CensoredPoint>& censored);

// fit.json's batch_sizes_with_unmeasured_seeds: each fitted batch size with seeds that measured
// nothing (MeasuredPoint::seeds_unmeasured), its counted seeds and those.
nlohmann::json unmeasured_seeds_json(const std::vector<MeasuredPoint>& measured);

}  // namespace lbt::analysis
