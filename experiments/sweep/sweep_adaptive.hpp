// The adaptive arm of a sweep (sweep.adaptive; trainer/adaptive_batch.hpp): each seed's
// adaptive trial read from its run directory (steps and examples to the target within the
// evaluation grid's bracket, the trajectory's predicted gamma) and adaptive.json beside
// fit.json: the seeds over against the fixed-batch fit (analysis/adaptive_gain.hpp).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/adaptive_gain.hpp"
#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {

// The trajectory an adaptive run followed up to `until_step` (<= 0: all of it): at each noise
// report the EMA B_simple that steered it (per_example's where resolved, else two_batch's: the
// trainer's choice) and the batch it chose for the next steps (metrics.jsonl's global_batch,
// logged every step by the sweep's adaptive trials).
std::vector<analysis::TrajectoryPoint> read_adaptive_trajectory(const std::filesystem::path& run,
                                                                std::int64_t until_step);

// One adaptive trial's measurements; the examples' lower end is eval.jsonl's at steps_lo.
analysis::AdaptiveSeed read_adaptive_seed(const TrialResult& result,
                                          const std::filesystem::path& run);

// Writes SWEEP_DIR/adaptive.json from the adaptive trials among `results` and `fit` (fit.json's
// content; null when the fit was skipped) and returns it; nothing when there are none.
nlohmann::json write_adaptive_json(const std::filesystem::path& sweep_dir,
                                   const std::vector<TrialResult>& results,
                                   const nlohmann::json& fit);

// The short table `lbt sweep` prints: steps and examples to the target, gamma, the product.
std::string format_adaptive_table(const nlohmann::json& adaptive);

}  // namespace lbt::experiments
