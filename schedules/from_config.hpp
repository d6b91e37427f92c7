// Builds the run's LR schedule from its typed schedule options (read from the `schedule.*`
// config keys by schedules/schedule_options.hpp). The trainer, `lbt schedule`, `lbt plan` and the
// Python module all build through this one function, so the printed curve is the very object
// the trainer uses. Depends on core/ for its ConfigErrors (throw_config_error, nearest) only; the
// builders it composes (schedule.hpp, warmup.hpp, decay.hpp) depend on nothing.
//
// The schedule is join(warmup, [hold], decay) at unit peak, then scaled by
// peak_lr = base_lr * rule(global_batch / reference_batch), then clamped below by min_lr.
// Lengths are a number plus a unit (steps, epochs, samples), rounded up to whole steps.
#pragma once
#include <cstdint>
#include <iostream>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"

namespace lbt::schedules {

// The schedule.* keys as read (names checked against their allowed values, lengths still in
// their units): what make_schedule receives, never the config.
struct ScheduleOptions {
  std::string source = "<schedule>";                       // the config file, for error messages
  std::set<std::string, std::less<>> set_on_command_line;  // keys whose errors name no file
  std::string recipe = "none";       // as given; its values are already in the fields below
  std::string scaling = "none";      // none | linear | sqrt
  std::int64_t reference_batch = 0;  // resolved: never 0 after read_schedule_options
  std::int64_t steps_per_epoch = 0;  // for tools that load no data (0: unknown)
  double warmup = 0.0;
  std::string warmup_unit = "steps", warmup_kind = "linear";
  double warmup_start = 0.0;
  double warmup_start_lr = -1.0;     // -1: use warmup_start
  bool warmup_start_given = false;   // warmup_start != 0
  bool warmup_from_base_lr = false;  // start at optimizer.lr, unscaled (Goyal et al.)
  bool warmup_legw = false;
  std::string decay = "constant", decay_unit = "steps";
  double decay_start = -1.0, decay_length = 0.0, decay_every = 0.0;
  std::vector<double> milestones;
  double gamma = 0.1, power = 1.0, rate = 1.0, final_frac = 0.0, cooldown_frac = 0.2;
  bool staircase = false;
  std::string cooldown_shape = "linear";
  double min_lr = 0.0;
};

// A warmup longer than the run: an error where a training run would climb towards a peak it
// never reaches (lbt train, a sweep's trials); a note where the question is the schedule itself
// or a window of the run (lbt schedule's plot, lbt noise's measurement), and wherever the warmup
// climbs nothing (Goyal et al.'s warmup at or below the reference batch is flat at the peak).
enum class WarmupPastRun { kError, kNote };

struct ScheduleContext {
  double base_lr = 0.0;                 // optimizer.lr, at the reference batch
  std::int64_t global_batch = 0;        // this run's global batch
  std::int64_t steps_per_epoch = 0;     // at this global batch (0: unknown, use the config key)
  std::int64_t total_steps = 0;         // the run's step budget
  std::ostream* warnings = &std::cerr;  // non-fatal notes (decay past the run); nullptr: silent
  // When set, receives the schedule's boundaries ("warmup end", "decay start", "decay end")
  // in steps, for plots that mark them.
  std::vector<std::pair<std::string, std::int64_t>>* boundaries = nullptr;
  WarmupPastRun warmup_past_run = WarmupPastRun::kError;
};

// Validates the options against the run (units need steps per epoch or a batch) and builds
// the schedule. Throws ConfigError naming the offending key.
Schedule make_schedule(const ScheduleOptions& options, const ScheduleContext& context);

}  // namespace lbt::schedules
