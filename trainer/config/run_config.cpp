// Resolving a run's config; see run_config.hpp.
#include "trainer/config/run_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "noise/noise_keys.hpp"
#include "optim/optimizer_keys.hpp"
#include "schedules/schedule_keys.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/data/load.hpp"
#include "trainer/data/sampler.hpp"

namespace lbt::trainer {

const Schema& run_schema() {
  static const Schema schema = [] {
    Schema s;
    s.add(train_keys())
        .add(optim::optimizer_keys())
        .add(schedules::schedule_keys())
        .add(noise::noise_keys());
    return s;
  }();
  return schema;
}

schedules::ScheduleOptions read_run_schedule(Config& config) {
  return schedules::read_schedule_options(config, config.get_int(train_key("train.global_batch")));
}

RunConfig resolve_run_config(Config& config, int world_size) {
  RunConfig run;
  run.train = read_train_config(config, world_size);
  run.optimizer = optim::read_optimizer_options(config);
  run.schedule = read_run_schedule(config);
  run.noise = noise::read_online_options(config);
  // "auto": at accum 2 micro-batch 0 alone (a third of the cost for twice the variance of a
  // step's |G|^2: the cheaper form per unit of precision), from 3 micro-batches all of them
  // (k(k-1)/2 pairs cut the variance faster than their cost grows); noise/online_estimator.hpp
  if (run.noise.small_batches == "auto") run.noise.all_micro_batches = run.train.accum_steps >= 3;
  // noise.small_batches chooses among micro-batches; on several ranks or without accumulation
  // there are none to choose from, so "first" would be ignored: refused instead.
  if (run.noise.enabled && run.noise.small_batches == "first" &&
      (world_size > 1 || run.train.accum_steps < 2)) {
    config.fail("noise.small_batches",
                "\"all\" here (\"first\" picks among micro-batches of "
                "one process with train.accum_steps >= 2)",
                "\"first\" with " + std::to_string(world_size) + " rank(s) and accum_steps " +
                    std::to_string(run.train.accum_steps),
                "remove noise.small_batches, or set train.accum_steps >= 2 on one process");
  }
  // The noise estimators read the allreduced gradient, which local SGD's steps do not form
  // (local_sgd.hpp): they measure in the synchronous phase only, so it must exist.
  const LocalSgdOptions& local = run.train.local_sgd;
  if (run.noise.enabled && local.enabled() && local.post_local_after == 0) {
    config.fail("noise.enabled",
                "false when every step is local SGD (no step allreduces the gradient the noise "
                "scale needs)",
                "true with train.sync_every = " + std::to_string(local.sync_every) +
                    " and train.post_local_after = 0",
                "set train.post_local_after = S > 0 to measure during the first S (synchronous) "
                "steps, or noise.enabled = false");
  }
  // train.overlap_comm reduces each bucket as backward finishes it, over the rank's gradient the
  // noise estimator reads before the allreduce: refused here, before any run directory (the
  // loop's refusal came after it, and lbt train --check and lbt scaling --compare passed it).
  if (run.noise.enabled && run.train.overlap_comm) {
    config.fail("train.overlap_comm",
                "false with the noise scale (the estimator reads each rank's gradient before the "
                "allreduce)",
                "true", "set train.overlap_comm=false, or noise.enabled=false");
  }
  // The adaptive batch follows the measured noise scale (adaptive_batch.hpp): it must be measured.
  if (run.train.adaptive.follows_noise() && !run.noise.enabled) {
    config.fail("noise.enabled",
                "true with train.batch_schedule = \"adaptive\" (the batch follows "
                "the measured noise scale)",
                "false", "--set noise.enabled=true");
  }
  return run;
}

namespace {

// train.epochs in steps, rounded up; a count no step counter holds (1e300 epochs) is refused,
// not cast (the cast's undefined result ran 0 steps and reported "completed").
std::int64_t steps_of_epochs(double epochs, std::int64_t steps_per_epoch) {
  const double steps = std::ceil(epochs * static_cast<double>(steps_per_epoch));
  if (!(steps < 0x1p62)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", epochs);
    throw ConfigError("train.epochs = " + std::string(text) + " is past any step count (" +
                          std::to_string(steps_per_epoch) + " steps per epoch)",
                      "set train.epochs to the run's length, or train.steps");
  }
  return static_cast<std::int64_t>(steps);
}

// A varying batch's largest (batch_max, or the largest stage) fits the data as a fixed batch
// must: one adaptive step drew 202,112 examples of 61,440, each about 3 times, and ran the
// budget 3x over (2026-11-29 audit).
void check_largest_batch_fits(const AdaptiveBatchOptions& a, std::int64_t train_examples,
                              int world_size) {
  const std::int64_t fits = train_examples / world_size * world_size;  // the sampler's epoch
  if (!a.enabled || a.batch_max <= fits) return;
  const char* key = a.follows_noise() ? "train.batch_max" : "train.batch_steps";
  throw ConfigError(
      "the training set has " + std::to_string(train_examples) + " examples, fewer than " + key +
          "'s batch of " + std::to_string(a.batch_max),
      "keep the batch at most " + std::to_string(fits / a.step_examples * a.step_examples) +
          " (a whole number of ranks x micro_batch), or use more training data");
}

// The run's examples (steps x its largest batch) fit the 64-bit counters: 2^62 steps of an
// adaptive batch overflowed the example budget, which read as spent, and the run "completed" at
// step 0 (2026-11-30 audit).
std::int64_t checked_steps(const TrainConfig& train, std::int64_t steps) {
  const std::int64_t batch = std::max<std::int64_t>(
      {train.global_batch, train.adaptive.enabled ? train.adaptive.batch_max : 0, 1});
  if (steps <= std::numeric_limits<std::int64_t>::max() / batch) return steps;
  const char* key = train.steps > 0 ? "train.steps" : "train.epochs";
  throw ConfigError(std::string(key) + ": " + std::to_string(steps) + " steps of up to " +
                        std::to_string(batch) + " examples pass any example count (2^63)",
                    "set " + std::string(key) + " to the run's length");
}

}  // namespace

StepBudget step_budget(const TrainConfig& train, std::int64_t train_examples, int world_size) {
  // The sampler's own count (it throws when the data hold less than one global batch).
  const data::ShardedSampler sampler(train_examples, 0, world_size, 0, train.micro_batch,
                                     train.accum_steps);
  check_largest_batch_fits(train.adaptive, train_examples, world_size);
  StepBudget budget;
  budget.steps_per_epoch = sampler.steps_per_epoch();
  budget.total_steps = checked_steps(
      train, train.steps > 0 ? train.steps : steps_of_epochs(train.epochs, budget.steps_per_epoch));
  return budget;
}

StepBudget schedule_budget(const TrainConfig& train, std::int64_t train_examples,
                           std::int64_t steps_per_epoch, int world_size) {
  if (train_examples > 0) return step_budget(train, train_examples, world_size);
  StepBudget budget;
  budget.steps_per_epoch = steps_per_epoch;
  budget.total_steps = checked_steps(
      train, train.steps > 0 ? train.steps : steps_of_epochs(train.epochs, steps_per_epoch));
  return budget;
}

PreviewEpochs preview_epochs(const RunConfig& run, std::int64_t steps_per_epoch,
                             std::int64_t train_examples) {
  PreviewEpochs e{steps_per_epoch > 0 ? steps_per_epoch : run.schedule.steps_per_epoch,
                  train_examples};
  if (e.steps_per_epoch == 0 && e.train_examples <= 0)
    e.train_examples = data::load_splits(run.train.data, run.train.seed).train.n;
  return e;
}

RunConfig at_global_batch(RunConfig run, std::int64_t global_batch, int workers) {
  run.train.global_batch = global_batch;
  run.train.micro_batch = global_batch / workers;
  run.train.accum_steps = 1;
  return run;
}

schedules::Schedule run_schedule(const RunConfig& run, const StepBudget& budget,
                                 std::ostream* warnings,
                                 std::vector<std::pair<std::string, std::int64_t>>* boundaries,
                                 schedules::WarmupPastRun warmup_past_run) {
  schedules::ScheduleContext context{run.optimizer.lr,
                                     run.train.global_batch,
                                     budget.steps_per_epoch,
                                     budget.total_steps,
                                     warnings,
                                     boundaries,
                                     warmup_past_run};
  return schedules::make_schedule(run.schedule, context);
}

}  // namespace lbt::trainer
