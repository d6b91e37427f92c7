// The joined schema; see lbt_schema.hpp.
#include "experiments/lbt_schema.hpp"

#include <ostream>

#include "experiments/sweep_keys.hpp"
#include "trainer/run_config.hpp"

namespace lbt::experiments {

const Schema& lbt_schema() {
  static const Schema schema = [] {
    Schema s = trainer::run_schema();
    s.add(sweep_keys());
    return s;
  }();
  return schema;
}

Config load_config(const std::filesystem::path& path, const std::vector<std::string>& sets,
                   std::ostream* notes) {
  Config config = Config::from_file(path);
  for (const auto& s : sets) config.set(s);
  for (const auto& note : config.validate(lbt_schema())) {
    if (notes) *notes << "note: " << note << "\n";
  }
  return config;
}

}  // namespace lbt::experiments
