// The sweep.* config keys (declared once), read by read_sweep_settings (sweep_plan.hpp).
#pragma once
#include <vector>

#include "core/config_schema.hpp"

namespace lbt::experiments {

const std::vector<KeySpec>& sweep_keys();

}  // namespace lbt::experiments
