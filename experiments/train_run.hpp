// One training run from a config: builds communicator, data, model, optimizer and schedule,
// writes the run directory (rank 0), trains, and records the outcome in summary.json.
// `lbt train` calls it once; sweeps call it once per trial.
#pragma once
#include <filesystem>
#include <string>

#include "core/config.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

enum class Resume {
  kNo,        // a fresh run (refuses a directory that already holds one, unless overwrite)
  kAuto,      // continue from `out`'s newest checkpoint when there is one, else start fresh
  kRequired,  // continue from `out`'s newest checkpoint; error when there is none
};

struct RunOptions {
  std::filesystem::path out;  // empty: runs/<config stem>-<timestamp>
  bool overwrite = false;
  bool progress = true;       // live line on a terminal
  Resume resume = Resume::kNo;
};

struct RunResult {
  std::filesystem::path run_dir;
  trainer::TrainOutcome outcome;
};

// Throws lbt::Error for bad config or data; a failure after the run directory exists is
// recorded there as status "failed" (with the message) before the error propagates.
RunResult run_training(Config& config, const RunOptions& options);

}  // namespace lbt::experiments
