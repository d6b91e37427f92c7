// The divergence guard: decides, from each step's global loss and gradient norm, whether the
// update goes ahead, is skipped (a loss spike, in skip mode), or the run has diverged.
//   spike:    loss or gradient norm is NaN/Inf, or loss > factor x the reference: the first
//             finite loss, or the untrained model's mean loss over more examples where that is
//             larger (initial_loss: a batch of 1 read 0.0016 where the mean was ~17, and an
//             ordinary later loss read as a spike)
//   stop mode (default): the first spike ends the run as `diverged`
//   skip mode: a spike drops that batch's update and training continues; more than
//              `skip_limit` spikes in a row end the run as `diverged`
// Pure state machine over plain numbers, so it is checked against hand-made loss sequences;
// its state travels in checkpoints with the loop state.
#pragma once
#include <cstdint>
#include <string>

namespace lbt::trainer {

struct DivergenceOptions {
  double factor = 20.0;         // train.divergence_factor
  bool skip_spikes = false;     // train.on_divergence = "skip"
  std::int64_t skip_limit = 5;  // train.skip_limit: spikes in a row before giving up
};

struct DivergenceState {
  double first_loss = -1.0;  // reference for the factor (-1: none finite yet)
  // A floor under the reference, set before the first step (-1: none); not in checkpoints: the
  // reference is fixed at the first step.
  double initial_loss = -1.0;
  std::int64_t skips_in_a_row = 0;
  std::int64_t skipped_steps = 0;  // total over the run
};

enum class StepVerdict { kUpdate, kSkip, kDiverged };

// Updates `state` with this step's numbers and says what to do; `reason` is set for kSkip
// and kDiverged.
StepVerdict judge_step(const DivergenceOptions& options, DivergenceState& state, double loss,
                       double grad_norm, std::string& reason);

}  // namespace lbt::trainer
