// Adaptive batch size (McCandlish et al. 2018, arXiv:1812.06162, App. D): the global batch
// follows the measured noise scale, B(t) = clip(B_simple(t), batch_min, batch_max), realised as
// ranks x micro_batch x k with a whole accumulation count k. The schedule is counted in
// examples (position = examples seen / batch_min) and the LR follows schedule.scaling at B(t).
#pragma once
#include <cstdint>

#include "core/config.hpp"

namespace lbt::trainer {

struct AdaptiveBatchOptions {
  bool enabled = false;            // train.batch_schedule = "adaptive"
  std::int64_t batch_min = 0;      // examples; the first steps' batch (before B_simple resolves)
  std::int64_t batch_max = 0;      // examples
  std::int64_t step_examples = 0;  // ranks x micro_batch: the batch moves in these steps
  double hysteresis = 0.1;         // change only when |B_new - B| > hysteresis x B
  std::int64_t accum_min() const { return batch_min / step_examples; }
  std::int64_t accum_max() const { return batch_max / step_examples; }
};

// The accumulation count for the next steps, given the EMA ("averaged", McCandlish §A.1)
// B_simple and the current count. Unresolved or non-finite B_simple: keep the current count.
// The target B* = clip(B_simple, batch_min, batch_max) is rounded to the nearest realisable
// batch; a move smaller than the hysteresis keeps the current count.
std::int64_t adaptive_accum(const AdaptiveBatchOptions& options, double b_simple, bool resolved,
                            std::int64_t accum);

// Reads train.batch_schedule, train.batch_min, train.batch_max, train.batch_hysteresis and
// resolves the layout: micro_batch (given, or batch_min / ranks), the realisable set
// {ranks x micro_batch x k} that batch_min and batch_max must belong to. Sets the run's
// starting layout (global_batch = batch_min). Throws ConfigError naming the key.
AdaptiveBatchOptions read_adaptive_batch(Config& config, int world_size, std::int64_t& global_batch,
                                         std::int64_t& micro_batch, std::int64_t& accum_steps);

}  // namespace lbt::trainer
