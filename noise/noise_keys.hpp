// The noise.* config keys (declared once), read by read_online_options and by `lbt noise`'s
// Hessian-weighted probe (noise.hessian.*).
#pragma once
#include <vector>

#include "core/config_schema.hpp"

namespace lbt::noise {

const std::vector<KeySpec>& noise_keys();

}  // namespace lbt::noise
