// Builds the run's LR schedule from the `schedule.*` config keys (the TOML side of
// schedules/, which itself depends on nothing). The trainer and `lbt schedule` both call this,
// so the printed curve is the very object the trainer uses.
//
// The schedule is join(warmup, [hold], decay) at unit peak, then scaled by
// peak_lr = base_lr * rule(global_batch / reference_batch), then clamped below by min_lr.
// Lengths are a number plus a unit (steps, epochs, samples), rounded up to whole steps.
#pragma once
#include <cstdint>
#include <iostream>
#include <ostream>

#include "core/config.hpp"
#include "schedules/schedule.hpp"

namespace lbt::trainer {

struct ScheduleContext {
  double base_lr = 0.0;                // optimizer.lr, at the reference batch
  std::int64_t global_batch = 0;       // this run's global batch
  std::int64_t steps_per_epoch = 0;    // at this global batch (0: unknown, use the config key)
  std::int64_t total_steps = 0;        // the run's step budget
  std::ostream* warnings = &std::cerr; // non-fatal notes (decay past the run, unused keys); nullptr: silent
};

// Reads every schedule.* key (so --help lists them all), validates, and builds the schedule.
// Throws ConfigError naming the offending key.
schedules::Schedule make_schedule(Config& config, const ScheduleContext& context);

}  // namespace lbt::trainer
