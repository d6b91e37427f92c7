// Local SGD and post-local SGD (Lin et al. 2020, "Don't use large mini-batches, use local SGD",
// arXiv:1808.07217, Alg. 1 and Sec. 3): after train.post_local_after synchronous steps, each
// rank steps with its own mean gradient (no gradient allreduce) and the ranks' parameters are
// averaged every train.sync_every = H steps. H = 1 is synchronous data parallelism itself.
#pragma once
#include <cstdint>
#include <span>

#include "core/config.hpp"
#include "optim/optimizer.hpp"
#include "trainer/comm/communicator.hpp"

namespace lbt::trainer {

struct LocalSgdOptions {
  std::int64_t sync_every = 1;        // H: steps between parameter averages (1: synchronous)
  std::int64_t post_local_after = 0;  // S: synchronous steps before the switch (Lin et al. Sec. 3)

  bool enabled() const { return sync_every > 1; }
  // Step `step` (0-based) is local: this rank's own mean gradient, no gradient allreduce.
  bool local_step(std::int64_t step) const { return enabled() && step >= post_local_after; }
  // After `steps` steps (1-based count), every rank holds the same parameters and optimizer
  // state: all steps so far synchronous, or `steps` a multiple of H, or the run's last step.
  bool in_sync_after(std::int64_t steps, std::int64_t total_steps) const {
    return !enabled() || steps <= post_local_after || steps % sync_every == 0 ||
           steps >= total_steps;
  }
  // The first step count >= `steps` at which the ranks are in sync (evaluations move there).
  std::int64_t sync_point_at_or_after(std::int64_t steps, std::int64_t total_steps) const;
};

// Reads train.sync_every and train.post_local_after (train_keys.cpp) and checks them with the
// keys they constrain (train.checkpoint_every). Throws ConfigError naming the key.
LocalSgdOptions read_local_sgd(Config& config, std::int64_t checkpoint_every);

// Lin et al. Alg. 1, the average every H steps: the parameters and every optimizer state buffer
// laid out like them (momentum, Adam's m and v) are replaced by their mean over the ranks, so
// a sync point leaves every rank with the same state and rank 0's checkpoint is the whole run's.
// `scratch` ([num_params] floats, the gradient buffer: free between update and next forward)
// carries each buffer through the communicator's gradient reduction, its fastest path (one
// node: shared memory, summed in rank order). Collective.
void average_over_ranks(std::span<float> params, optim::Optimizer& optimizer,
                        std::span<float> scratch, comm::Communicator& comm);

}  // namespace lbt::trainer
