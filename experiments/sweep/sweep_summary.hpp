// What a sweep says once its trials have run (sweep.hpp): the outcome's counts of reached and
// failed trials, and for a whole sweep (not one SLURM array task) the warnings about noisy
// targets, the fit of the critical batch (fit.json), the adaptive trials' table and the plots.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/sweep/sweep.hpp"
#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {

// trial_index >= 0: an array task, which counts only its own trial's failure and fits nothing.
void summarise_sweep(const std::filesystem::path& dir, const std::vector<TrialResult>& results,
                     const std::string& target, int trial_index, bool plots, SweepOutcome& out);

}  // namespace lbt::experiments
