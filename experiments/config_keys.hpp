// Every config key a run reads, with its default and doc: the readers run once over an empty
// config, so `lbt train --help` can never drift from what the code accepts.
#pragma once
#include <string>
#include <vector>

#include "core/config.hpp"

namespace lbt::experiments {

std::vector<ConfigKey> run_config_keys();
std::string format_config_keys(const std::vector<ConfigKey>& keys);

}  // namespace lbt::experiments
