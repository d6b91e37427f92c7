// The small per-step sums that ride on one allreduce with the step (one message, not six):
// this rank's loss, correct predictions and examples; |g_local|^2 of a local SGD step; two
// votes every rank acts on after the same step (stop: a signal reached a rank; checkpoint now:
// rank 0's wall-time interval has passed); and the noise estimator's sums.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace lbt::trainer {

class StepSums {
 public:
  explicit StepSums(std::size_t noise_slots) : values_(kNoise + noise_slots, 0.0) {}

  double& loss() { return values_[kLoss]; }
  double& correct() { return values_[kCorrect]; }
  double& examples() { return values_[kExamples]; }
  double& local_grad_sq() { return values_[kLocalGradSq]; }
  double& stop_vote() { return values_[kStopVote]; }
  double& checkpoint_vote() { return values_[kCheckpointVote]; }
  std::span<double> noise() { return std::span<double>(values_).subspan(kNoise); }

  // What the allreduce sums, every rank's in the same order.
  std::span<double> all() { return values_; }
  // Before a step's micro-batches add their loss, correct predictions and examples.
  void clear_batch() { std::fill_n(values_.begin(), kLocalGradSq, 0.0); }

 private:
  enum Index : std::size_t {
    kLoss,
    kCorrect,
    kExamples,
    kLocalGradSq,
    kStopVote,
    kCheckpointVote,
    kNoise,  // the noise estimator's slots from here on
  };
  std::vector<double> values_;
};

}  // namespace lbt::trainer
