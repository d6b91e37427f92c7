// Divergence guard; see divergence.hpp.
#include "trainer/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lbt::trainer {

StepVerdict judge_step(const DivergenceOptions& options, DivergenceState& state, double loss,
                       double grad_norm, std::string& reason) {
  if (state.first_loss < 0.0 && std::isfinite(loss))
    state.first_loss = std::max(loss, state.initial_loss);
  const bool nonfinite = !std::isfinite(loss) || !std::isfinite(grad_norm);
  if (!nonfinite && !(loss > options.factor * state.first_loss)) {
    state.skips_in_a_row = 0;
    return StepVerdict::kUpdate;
  }
  char numbers[160];
  std::snprintf(numbers, sizeof numbers,
                "loss %.4g exceeded train.divergence_factor %g x the reference loss %.4g", loss,
                options.factor, state.first_loss);
  reason = nonfinite ? "loss or gradient norm is NaN/Inf" : numbers;
  if (options.skip_spikes && state.skips_in_a_row < options.skip_limit) {
    ++state.skips_in_a_row;
    ++state.skipped_steps;
    return StepVerdict::kSkip;
  }
  if (options.skip_spikes) {
    reason += " after " + std::to_string(state.skips_in_a_row) +
              " skipped steps in a row (train.skip_limit)";
  }
  return StepVerdict::kDiverged;
}

}  // namespace lbt::trainer
