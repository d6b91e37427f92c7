// The sweep's progress line on stderr, one per finished trial: its status and steps-to-target
// bracket, how many trials are done, running and left, the time elapsed and an estimate of what
// is left.
#pragma once
#include <cstddef>

#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {

struct SweepCounts {
  int done = 0;
  std::size_t left = 0, running = 0;
};

void print_trial_progress(const TrialResult& result, const SweepCounts& counts, double elapsed_s);

}  // namespace lbt::experiments
