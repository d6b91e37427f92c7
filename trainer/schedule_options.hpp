// Reading the `schedule.*` config keys into the typed schedules::ScheduleOptions that
// schedules/from_config.hpp builds the LR schedule from (the trainer's side: the keys, their
// defaults and which apply, schedule_keys.hpp).
#pragma once
#include "core/config.hpp"
#include "schedules/from_config.hpp"

namespace lbt::trainer {

// Reads the schedule.* keys the chosen decay uses. schedule.reference_batch 0 resolves to the
// config's train.global_batch (the batch the preset was written for).
schedules::ScheduleOptions read_schedule_options(Config& config);

}  // namespace lbt::trainer
