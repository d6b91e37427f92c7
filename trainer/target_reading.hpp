// Steps-to-target under a named reading. The first step at which a noisy validation
// metric meets a target depends on how often it is looked at when the target sits in the
// metric's fluctuation near its plateau; these pieces make the reading a property of the
// training: a definition that is well-conditioned (the metric of an exponential moving average
// of the weights, as Zhang et al. 2024, arXiv:2410.21676, evaluate), an evaluation grid spaced
// in steps relative to the step (the same at every batch size), and a refinement that replays
// from the last evaluation clearly below the target, so crossings before the last
// below-target evaluation are found too. Pure functions: the loop (loop_evaluation.cpp) and
// the tests drive the same code.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainer/config/train_config.hpp"

namespace lbt::trainer {

// ema: the target read on the weights' EMA (train.ema_horizon); first_passage: Shallue et
// al. 2019's first evaluated step of the raw weights meeting the target.
// TargetDefinition (train_config.hpp): kEma or kFirstPassage.
inline constexpr TargetDefinition kAllReadings[] = {TargetDefinition::kEma,
                                                    TargetDefinition::kFirstPassage};
TargetDefinition parse_target_definition(const std::string& text);  // throws ConfigError
const char* definition_name(TargetDefinition d);

// The EMA's weight on the weights after `step` steps (1-based), `since` steps after its last
// update: alpha = min(1, since / (horizon x step)). Its time constant is horizon x step, a
// fixed fraction of the run so far, so it averages the same share of the trajectory at every
// batch size (Polyak-Ruppert with polynomial decay; Shamir & Zhang 2013, eta = 1/horizon - 1).
double ema_weight(std::int64_t step, std::int64_t since, double horizon);

// The ema reading needs an average longer than 2 steps at the run's end: horizon x total
// steps >= 2, else a ConfigError naming train.ema_horizon (`source`: the config's name);
// runs under 20 steps (smoke runs, memory probes) are let through.
void check_ema_horizon(const TrainConfig& cfg, std::int64_t total_steps, const std::string& source);

// How far `metric` is short of the target in metric units (> 0: not met; NaN: not measured).
double shortfall(const Target& target, double metric);
// Short of the target by more than band x |target value|: the refinement may start here.
bool clearly_below(const Target& target, double metric, double band);

// The evaluation steps: every `every` steps, or with growth g > 1 geometrically, the next one
// after step s at s + max(every, ceil((g - 1) s)): O(log S) evaluations for S steps, spaced
// the same relative to the step at every batch size (the refinement narrows the crossing).
std::int64_t next_eval_after(std::int64_t step, std::int64_t every, double growth);

// (lo, hi]: not met at lo (an evaluated step, 0: the start), met at hi (-1: never met).
struct StepBracket {
  std::int64_t lo = 0, hi = -1;
  bool met() const { return hi >= 0; }
};

// Moves a step to one the run can evaluate at (local SGD: its next average); the identity
// where every step can.
using Align = std::function<std::int64_t(std::int64_t)>;

// The reading's grid: 0, then s + max(1, floor(resolution x (s + 1))) moved by `align`: fixed
// in steps from the start, whatever the evaluation cadence. Until the target is met every
// evaluation falls on it (the first grid step at or after the cadence's) and the refinement
// walks it, so the reading is the first grid step meeting the target however often the run
// looked (given a replay start before it). Until 2026-11-29 the walk's grid started at the
// replay start, which the cadence chose: where the metric hovers at the target, cadences read
// the same run up to 28% apart, in disjoint brackets. Resolution 0: every step.
std::int64_t grid_step_at_or_after(std::int64_t step, double resolution, const Align& align);

// The refinement: from `from` (not met) towards `hi` (met), evaluating at each grid step in
// between, stopping at the first meeting the target. Between grid steps the bracket is at most
// resolution x (lo + 1) <= resolution x hi wide; walking forward, not bisecting, keeps the
// first crossing when the metric hovers around the target. Resolution 1: no refinement.
struct Walk {
  StepBracket bracket;
  int evals = 0;
};
Walk walk_to_crossing(std::int64_t from, std::int64_t hi, double resolution, const Align& align,
                      const std::function<bool(std::int64_t)>& met_at);

struct MetricPoint {
  std::int64_t step = 0;
  double value = 0.0;
};
// The first evaluated step meeting the target and the last evaluated step before it.
StepBracket first_passage(std::vector<MetricPoint> points, const Target& target);

// The metric's fluctuation near its crossing: the RMS residual of each evaluation from the
// line through its two neighbours, scaled so white noise of spread sigma gives sigma; a trend
// drops out to first order, however the evaluations are spaced. NaN under 4 points.
double fluctuation(std::vector<MetricPoint> points);

}  // namespace lbt::trainer
