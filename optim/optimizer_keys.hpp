// The optimizer.* config keys (declared once: type, default, allowed values, doc, and which
// optimizer uses each), read by read_optimizer_options (optimizer_options.hpp).
#pragma once
#include <vector>

#include "core/config_schema.hpp"

namespace lbt::optim {

const std::vector<KeySpec>& optimizer_keys();

}  // namespace lbt::optim
