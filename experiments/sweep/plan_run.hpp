// The run lbt plan writes (scale_plan.hpp): the sweep's trials' config, that is base_config.toml
// with the --set options lbt sweep was given (sweep.json), at the planned batch, LR and length.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::experiments {

// What the trials trained with beyond base_config.toml, from sweep.json: the target, the --set
// options given to lbt sweep (every trial got them; a plan without them trained another schedule
// or momentum than the one measured, 2026-11-29 audit) and each trial's budget.
struct SweepManifest {
  std::string target;
  std::vector<std::string> sets;
  std::int64_t max_examples = -1, max_steps = -1;  // sweep.max_*; -1: not recorded (older sweep)
  std::string exec;  // the program the trials ran (--exec); "": lbt train
  // The CRC-32 of base_config.toml as lbt sweep wrote it (none: a sweep from before 2026-11-30).
  std::optional<std::uint32_t> base_config_crc32;
};
SweepManifest read_sweep_manifest(const std::filesystem::path& sweep_dir);

// sweep.json's manifest with its seal of base_config.toml, which trials_config checks: a file
// cut to its first line loaded as lbt's defaults, and the plan named another model and LR
// (2026-11-30 audit).
nlohmann::json with_base_config_seal(nlohmann::json manifest, const std::string& base_config);
// Whether sweep.json's `manifest` seals exactly `base_config` (false where it holds no seal).
bool base_config_sealed(const nlohmann::json& manifest, const std::string& base_config);

// base_config.toml with the manifest's --set options. Throws DataError where base_config.toml is
// not the one lbt sweep wrote (its first line says so, and its CRC-32 where sweep.json has it):
// an emptied one loaded as lbt's defaults, and the plan then named a model, LR rule and warmup
// the sweep never trained.
Config trials_config(const std::filesystem::path& sweep_dir, const SweepManifest& manifest);

struct PlanRunOptions {
  std::int64_t global_batch = 0, steps = 0, eval_every = 0;
  std::int64_t trials_steps = 0;  // a trial's train.steps at global_batch (0: unknown)
  std::string target;
  double lr_at_reference = 0.0;  // optimizer.lr, at the trials' schedule.reference_batch
  int workers = 0;               // 0: one process with the trials' layout
  std::int64_t micro_batch = 0;  // with workers
  std::int64_t max_steps = 0;    // lbt plan's --max-steps (0: none), where `steps` may come from
};

struct PlanRun {
  trainer::RunConfig run;
  bool schedule_differs = false;  // from a trial's at the batch (a --max-steps cut the run)
};

// Sets `config` to the plan's batch, steps, evaluation, target and LR, validates it, and builds
// its schedule as the run will: a batch past the training set, or a warmup past the run, is a
// ConfigError naming lbt plan's options.
PlanRun set_plan_run(Config& config, const PlanRunOptions& options);

}  // namespace lbt::experiments
