// The schema of every config key lbt reads (model, data, train, comm, optimizer, schedule,
// noise, sweep), and the one way a command loads a config: file + --set, validated against it.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace lbt::experiments {

const Schema& lbt_schema();

// Reads `path`, applies `sets` (--set key=value) and validates the result against
// lbt_schema(); notes (keys dropped because --set changed the setting they belong to) go to
// `notes` when it is not null. Throws ConfigError.
// The same from a Config already read (a recipe over lbt's defaults: lbt.schedule("goyal")).
Config load_config(Config config, const std::vector<std::string>& sets, std::ostream* notes);
Config load_config(const std::filesystem::path& path, const std::vector<std::string>& sets,
                   std::ostream* notes);

}  // namespace lbt::experiments
