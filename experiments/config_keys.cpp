// Config key listing; see config_keys.hpp.
#include "experiments/config_keys.hpp"

#include <algorithm>
#include <sstream>

#include "noise/online_estimator.hpp"
#include "optim/optimizer.hpp"
#include "trainer/schedule_config.hpp"
#include "trainer/train_config.hpp"

namespace lbt::experiments {

std::vector<ConfigKey> run_config_keys() {
  Config config;
  trainer::read_train_config(config, 1);
  const double lr = optim::base_learning_rate(config);
  std::vector<Segment> segments = {make_segment("fc1.weight", 0, 16, ParamKind::kWeight)};
  optim::apply_exclusions(config, segments);
  optim::make_optimizer(config, 16);
  trainer::make_schedule(config, {lr, 128, 100, 1000});
  noise::read_online_options(config);
  return config.known_keys();
}

std::string format_config_keys(const std::vector<ConfigKey>& keys) {
  std::size_t width = 0;
  for (const auto& k : keys) width = std::max(width, k.key.size() + 3 + k.default_value.size());
  std::ostringstream ss;
  ss << "Config keys (TOML sections, or --set key=value), with defaults:\n";
  for (const auto& k : keys) {
    std::string left = k.key + " = " + k.default_value;
    ss << "  " << left << std::string(width - left.size() + 2, ' ') << k.doc << "\n";
  }
  return ss.str();
}

}  // namespace lbt::experiments
