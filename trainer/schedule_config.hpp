// Builds the run's LR schedule from the `schedule.*` config keys (the TOML side of
// schedules/, which itself depends on nothing). The trainer and `lbt schedule` both call this,
// so the printed curve is the very object the trainer uses.
#pragma once
#include <cstdint>

#include "core/config.hpp"
#include "schedules/schedule.hpp"

namespace lbt::trainer {

struct ScheduleContext {
  double base_lr = 0.0;                // optimizer.lr, at the reference batch
  std::int64_t global_batch = 0;       // this run's global batch
  std::int64_t steps_per_epoch = 0;    // at this global batch
  std::int64_t total_steps = 0;        // the run's step budget
};

schedules::Schedule make_schedule(Config& config, const ScheduleContext& context);

}  // namespace lbt::trainer
