// Adaptive batch size (McCandlish et al. 2018, arXiv:1812.06162, App. D): the global batch
// follows the measured noise scale, B(t) = clip(rule(B_simple(t)), batch_min, batch_max),
// realised as ranks x micro_batch x k with a whole accumulation count k. Two rules:
//   b_simple: B = B_simple (B_crit ~ B_noise ~ B_simple, §2.2);
//   sqrt:     B = sqrt(B0 x B_simple), B0 = train.batch_sqrt_scale (examples). From the per-step
//             model (eq. 2.7-2.11: a step with batch B makes the progress of 1/(1 + B_noise/B)
//             optimal steps, so dS = ds (1 + B_noise/B), dE = ds (B + B_noise)), minimising
//             S + E / B0 at each s gives B = sqrt(B0 B_noise): B0 is the examples one is willing
//             to spend to save a step, and B = B_simple where B_simple = B0. Its gain over any
//             fixed batch is analysis/adaptive_gain.hpp's gamma (App. D, eq. D.5). The schedule is
//             counted in
// examples (position = examples seen / batch_min) and the LR follows schedule.scaling at B(t).
//
// train.batch_schedule = "steps" (batch_steps.hpp) shares the layout and the counting in
// examples: the batch then follows a planned piecewise-constant schedule instead.
#pragma once
#include <cstdint>
#include <vector>

#include "core/config.hpp"
#include "trainer/batch_steps.hpp"

namespace lbt::trainer {

enum class BatchRule { BSimple, Sqrt };  // train.batch_rule

struct AdaptiveBatchOptions {
  bool enabled = false;          // the batch varies: train.batch_schedule = "adaptive" or "steps"
  std::vector<BatchStep> steps;  // "steps": the planned stages (empty: "adaptive")
  BatchRule rule = BatchRule::BSimple;
  double sqrt_scale = 0.0;         // examples; B0 of the sqrt rule
  std::int64_t batch_min = 0;      // examples; the first steps' batch (before B_simple resolves)
  std::int64_t batch_max = 0;      // examples
  std::int64_t step_examples = 0;  // ranks x micro_batch: the batch moves in these steps
  double hysteresis = 0.1;         // change only when |B* - B| > hysteresis x B + step_examples / 2
  bool follows_noise() const { return enabled && steps.empty(); }
  std::int64_t accum_min() const { return batch_min / step_examples; }
  std::int64_t accum_max() const { return batch_max / step_examples; }
};

// The rule's batch before clipping and rounding: B_simple, or sqrt(B0 x B_simple).
double rule_batch(const AdaptiveBatchOptions& options, double b_simple);

// The accumulation count for the next steps, given the EMA ("averaged", McCandlish §A.1)
// B_simple and the current count. Unresolved or non-finite B_simple: keep the current count.
// The target B* = clip(rule_batch(B_simple), batch_min, batch_max) is rounded to the nearest
// realisable batch, taken only when B* is more than hysteresis x B plus half a realisable step
// from the current batch B (else the current count): a B* between two realisable batches stays.
std::int64_t adaptive_accum(const AdaptiveBatchOptions& options, double b_simple, bool resolved,
                            std::int64_t accum);

// The accumulation count of the step after `examples_seen` examples under train.batch_steps.
std::int64_t stepped_accum(const AdaptiveBatchOptions& options, std::int64_t examples_seen);

// Reads train.batch_schedule, train.batch_rule, train.batch_sqrt_scale, train.batch_min,
// train.batch_max, train.batch_hysteresis (adaptive) or train.batch_steps (steps) and
// resolves the layout: micro_batch (given, or the smallest batch / ranks), the realisable set
// {ranks x micro_batch x k} that every batch must belong to. Sets the run's starting layout
// (global_batch = batch_min, or the first stage's batch: the unit of train.steps and of the
// schedule's position). Throws ConfigError naming the key.
AdaptiveBatchOptions read_adaptive_batch(Config& config, int world_size, std::int64_t& global_batch,
                                         std::int64_t& micro_batch, std::int64_t& accum_steps);

}  // namespace lbt::trainer
