// Reading the `schedule.*` config keys into the typed ScheduleOptions that from_config.hpp
// builds the LR schedule from (the keys, their defaults and which apply: schedule_keys.hpp).
#pragma once
#include <cstdint>

#include "core/config.hpp"
#include "schedules/from_config.hpp"

namespace lbt::schedules {

// Reads the schedule.* keys the chosen decay uses. schedule.reference_batch 0 resolves to
// `configured_batch`, the config's train.global_batch (the batch the preset was written for:
// trainer::read_run_schedule passes it).
ScheduleOptions read_schedule_options(Config& config, std::int64_t configured_batch);

}  // namespace lbt::schedules
