// A training run's whole configuration, resolved once from a validated Config into the typed
// options each part receives: the trainer's, the optimizer's, the schedule's and the noise
// estimator's. `lbt train`, `lbt sweep` (per trial), `lbt noise` and `lbt schedule` all resolve
// through here, so they cannot disagree on a key or a default.
#pragma once
#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "noise/online_estimator.hpp"
#include "optim/optimizer_options.hpp"
#include "schedules/schedule_options.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::trainer {

struct RunConfig {
  TrainConfig train;
  optim::OptimizerOptions optimizer;
  schedules::ScheduleOptions schedule;
  noise::OnlineOptions noise;
};

// The keys of a training run: model, data, train, comm, optimizer, schedule and noise.
const Schema& run_schema();

// The schedule.* keys, schedule.reference_batch defaulting to the config's train.global_batch.
schedules::ScheduleOptions read_run_schedule(Config& config);

// Reads every key a training run uses (the config must have passed Config::validate against
// a schema holding these parts' keys). Throws ConfigError naming the key.
RunConfig resolve_run_config(Config& config, int world_size);

// How many optimizer steps a run takes, counted as the trainer counts them: each epoch is a
// permutation of the training set, drop-last, split evenly over ranks.
struct StepBudget {
  std::int64_t steps_per_epoch = 0;
  std::int64_t total_steps = 0;
};
StepBudget step_budget(const TrainConfig& train, std::int64_t train_examples, int world_size);
// The budget `lbt schedule` and Python's lbt.schedule show without training: step_budget when
// the training examples are known (> 0), else from `steps_per_epoch`: train.steps, or
// ceil(train.epochs x steps_per_epoch).
StepBudget schedule_budget(const TrainConfig& train, std::int64_t train_examples,
                           std::int64_t steps_per_epoch, int world_size);

// What `lbt schedule` and lbt.schedule count a preview's epochs from: the steps per epoch given
// (> 0), else the config's; where neither is set, the training examples given (> 0), else the
// data's, loaded as the trainer loads them. For schedule_budget.
struct PreviewEpochs {
  std::int64_t steps_per_epoch = 0, train_examples = 0;
};
PreviewEpochs preview_epochs(const RunConfig& run, std::int64_t steps_per_epoch,
                             std::int64_t train_examples);

// The same run at global batch B over `workers` ranks, a micro-batch of B / workers each (no
// accumulation); the reference batch stays the config's, so the scaling rule shows (`lbt
// schedule -b`, lbt.schedule(global_batch=)).
RunConfig at_global_batch(RunConfig run, std::int64_t global_batch, int workers);

// The schedule the trainer builds for `run` with `budget` (warnings on `warnings`, or none).
schedules::Schedule run_schedule(
    const RunConfig& run, const StepBudget& budget, std::ostream* warnings,
    std::vector<std::pair<std::string, std::int64_t>>* boundaries = nullptr,
    schedules::WarmupPastRun warmup_past_run = schedules::WarmupPastRun::kError);

}  // namespace lbt::trainer
