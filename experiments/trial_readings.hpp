// summary.json's "readings": for each reading of steps-to-target (the weights' EMA,
// the raw first passage; trainer/target_reading.hpp), its bracket, the metric's fluctuation
// near its crossing and the best value it reached, from the run's eval.jsonl. The definition's
// bracket is the loop's (refined by replay); the other reading's is read off the evaluations
// logged (the coarse grid and the refinement's), so it is as wide as their spacing.
#pragma once
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "trainer/loop.hpp"
#include "trainer/target_reading.hpp"

namespace lbt::experiments {

struct ReadingResult {
  std::int64_t lo = -1, hi = -1;  // (lo, hi]; hi -1: not met
  double fluctuation = std::numeric_limits<double>::quiet_NaN();
  double best = std::numeric_limits<double>::quiet_NaN();
};

// One reading's metric at each logged evaluation: the raw weights' `metric`, or the EMA's.
std::vector<trainer::MetricPoint> reading_points(const std::filesystem::path& eval_jsonl,
                                                 trainer::TargetDefinition reading,
                                                 const std::string& metric);

// The fluctuation over the evaluations within a factor 2 of the crossing (steps in
// [hi / 2, 2 hi]), or over the last half of the run where the target was not met.
ReadingResult read_reading(const std::vector<trainer::MetricPoint>& points,
                           const trainer::Target& target, std::int64_t last_step);

// summary.json's target_definition, ema_horizon, target_band and readings.
void add_readings(nlohmann::json& summary, const std::filesystem::path& eval_jsonl,
                  const trainer::TrainConfig& cfg, const trainer::TrainOutcome& outcome);

}  // namespace lbt::experiments
