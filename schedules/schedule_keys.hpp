// The schedule.* config keys (declared once: which decay uses which key, units, defaults),
// read by read_schedule_options (schedule_options.hpp).
#pragma once
#include <vector>

#include "core/config_schema.hpp"

namespace lbt::schedules {

const std::vector<KeySpec>& schedule_keys();

}  // namespace lbt::schedules
