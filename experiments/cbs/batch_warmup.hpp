// `lbt plan --from CBS_DIR`: a batch-size warmup that follows the critical batch `lbt cbs`
// measured along a run (Merrill et al. 2025, arXiv:2505.23971, Sec. 5: the batch grows as
// CBS(t) grows, and steps fall with the loss kept). The plan is train.batch_schedule = "steps"
// (trainer/batch_steps.hpp) on the reference run's own config, with the LR rule the branches
// measured with; docs/cbs.md says how each stage is chosen.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trainer/batch_steps.hpp"

namespace lbt::experiments {

// One point of cbs.json as the warmup reads it.
struct CbsReading {
  std::int64_t step = 0;   // the reference's step
  std::int64_t batch = 0;  // the reference's global batch B
  // The batch the point says is safe: the estimate; B where even 2B was outside ("below");
  // the largest batch tried where all were inside ("at_least"); none where unmeasured.
  std::optional<std::int64_t> safe_batch;
};

// The stages: from 0 the reference batch, then from each reading's data position (step x B
// examples) its safe batch, rounded down to the layout's grid (ranks x micro_batch), at least
// one grid step and at most `max_batch`; never smaller than the stage before (a warmup), equal
// neighbours merged. Unmeasured readings are skipped.
std::vector<trainer::BatchStep> warmup_stages(const std::vector<CbsReading>& readings,
                                              std::int64_t grid, std::int64_t max_batch);

// Where the layout's smallest batch (`grid`) is above a point's safe batch, the warmup trains
// above the critical batch measured there: a warning naming the first such point; none
// otherwise.
std::optional<std::string> above_measured_warning(const std::vector<CbsReading>& readings,
                                                  std::int64_t grid);

struct WarmupPlanOptions {
  std::filesystem::path cbs_dir;  // written by lbt cbs
  int workers = 0;                // 0: one worker at the reference's micro-batch
  std::int64_t micro_batch = 0;
  std::int64_t max_batch = 0;  // 0: the training set's size
  std::filesystem::path out;   // the config (default: CBS_DIR/plan.toml)
  bool overwrite = false;
};

// Reads CBS_DIR/cbs.json and the reference's config, writes the config and its plan_json_path
// (experiments/sweep/scale_plan.hpp), returns that JSON's content. Throws ConfigError / DataError
// before writing anything.
nlohmann::json plan_batch_warmup(const WarmupPlanOptions& options);

std::string format_warmup_plan(const nlohmann::json& plan);

}  // namespace lbt::experiments
