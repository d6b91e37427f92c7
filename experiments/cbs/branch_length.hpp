// How long lbt cbs's branches run, measured from the reference run's own loss noise (the
// default of --examples). Branches at k x B are compared by their loss after a fixed amount of
// data (Merrill et al. 2025); the comparison says something only where the reference branch
// (k = 1, the reference run's own continuation) falls over that data by clearly more than the
// loss's noise. So: a least-squares line of the reference's val_loss over the examples it had
// seen, through its evaluations after the checkpoint (and before it, when fewer than
// kMinEvaluations lie after), gives the fall per example g and the residuals' standard
// deviation s (n - 2 degrees of freedom; the curve's bend adds to s, which lengthens the branch:
// the safe side). The branch runs the data over which the line falls by kFallInNoise x s, twice
// the default tolerance of 2 standard deviations (cbs_estimate.hpp), rounded up to whole steps at
// the largest batch, and at least kMinSteps and at most kMaxSteps of them. Where the line does
// not fall or the evaluations are too few, the floor, and the rule says why. Pure: no files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lbt::experiments {

inline constexpr double kFallInNoise = 4.0;
inline constexpr std::int64_t kMinSteps = 8, kMaxSteps = 64;  // at the largest batch
inline constexpr int kMinEvaluations = 4;

struct EvalPoint {
  std::int64_t examples = 0;  // seen by the reference when it evaluated
  double val_loss = 0.0;
};

struct BranchLength {
  std::int64_t examples = 0;  // per branch, a whole number of steps at the largest batch
  double fall_per_example = 0.0, noise = 0.0;  // the line's -g and s; 0 where not measured
  int evaluations = 0;                         // how many the line went through
  std::string rule;                            // how the length was chosen, in words
};

// curve: the reference's evaluations in order; from: the examples at the checkpoint;
// largest_batch: max(k) x B.
BranchLength measured_branch_length(const std::vector<EvalPoint>& curve, std::int64_t from,
                                    std::int64_t largest_batch);

}  // namespace lbt::experiments
