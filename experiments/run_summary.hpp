// A run's summary.json (docs/checkpoints.md, "The run directory, in full"): the outcome so far
// and what every summary of the run repeats beside it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/config/train_config.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

// What every summary.json of this run repeats beside its outcome.
struct SummaryParts {
  const trainer::TrainConfig& cfg;
  std::string model, optimizer;
  int world_size, threads;  // threads: per rank, train.threads or its default
  std::int64_t steps_per_epoch;
  std::filesystem::path run_dir;
  std::int64_t val_examples;

  // summary.json for `o`: status, steps, the target's bracket, best and final metrics with the
  // final ones' 95% intervals, throughput, and the steps-to-target under each reading.
  nlohmann::json of(const trainer::TrainOutcome& o) const;
};

}  // namespace lbt::experiments
