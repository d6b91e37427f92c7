// One training run from a config: builds communicator, data, model, optimizer and schedule,
// writes the run directory (rank 0), trains, and records the outcome in summary.json.
// `lbt train` calls it once; sweeps call it once per trial.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

#include "core/config.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

// What a per-step probe (e.g. `lbt noise`'s Hessian-weighted B_noise) may use; it runs at the
// top of a step, before any gradient work, on this rank's data.
struct ProbeContext {
  nn::Model& model;
  const data::Splits& data;
  const trainer::TrainConfig& config;
  trainer::RunDirectory* run_dir;  // rank 0 only
};

struct RunOptions {
  std::filesystem::path out;  // empty: runs/<config stem>-<timestamp>
  bool overwrite = false;
  bool progress = true;       // live line on a terminal
  std::function<void(std::int64_t step, ProbeContext& context)> probe;  // empty: none
};

struct RunResult {
  std::filesystem::path run_dir;
  trainer::TrainOutcome outcome;
};

// Throws lbt::Error for bad config or data; a failure after the run directory exists is
// recorded there as status "failed" (with the message) before the error propagates.
RunResult run_training(Config& config, const RunOptions& options);

}  // namespace lbt::experiments
