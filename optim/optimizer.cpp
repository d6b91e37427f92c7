// The optimizer factory and the optimizer.* config entry points; see optimizer.hpp.
#include "optim/optimizer.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/larc.hpp"
#include "optim/lars.hpp"
#include "optim/sgd.hpp"

namespace lbt::optim {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const std::vector<std::string> kLarcBases = {"sgd", "momentum", "nesterov", "adam", "adamw"};

// A base optimizer that LARC can wrap; under LARC its own decay stays 0 (Apex).
std::unique_ptr<SegmentwiseOptimizer> make_segmentwise(Config& config, const std::string& name,
                                                       std::size_t num_params, bool read_decay) {
  if (name == "sgd" || name == "momentum" || name == "nesterov")
    return std::make_unique<Sgd>(read_sgd_options(config, name, read_decay), num_params);
  if (name == "adam" || name == "adamw")
    return std::make_unique<Adam>(read_adam_options(config, name, read_decay), num_params);
  return nullptr;
}

}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd",   "momentum", "nesterov", "adam",
                                                 "adamw", "lars",     "larc",     "lamb"};
  return names;
}

double base_learning_rate(Config& config) {
  double lr = config.get_double("optimizer.lr", 0.05, "base learning rate (before scaling rule and schedule)");
  if (!(lr > 0.0) || !std::isfinite(lr)) {
    config.fail("optimizer.lr", "a positive finite number", std::to_string(lr),
                "try --set optimizer.lr=0.05");
  }
  return lr;
}

std::unique_ptr<Optimizer> make_optimizer(Config& config, std::size_t num_params) {
  std::string name = config.get_string("optimizer.name", "sgd", "one of: " + join(optimizer_names()));
  if (auto opt = make_segmentwise(config, name, num_params, true)) return opt;
  if (name == "lars") return std::make_unique<Lars>(read_lars_options(config), num_params);
  if (name == "lamb") return std::make_unique<Lamb>(read_lamb_options(config), num_params);
  if (name == "larc") {
    LarcOptions larc = read_larc_options(config);
    std::string base = config.get_string("optimizer.larc.base", "sgd",
                                         "optimizer LARC wraps: one of " + join(kLarcBases));
    auto base_opt = make_segmentwise(config, base, num_params, false);
    if (!base_opt)
      config.fail("optimizer.larc.base", "one of: " + join(kLarcBases), "'" + base + "'",
                  "LARC wraps a per-element optimizer; LARS and LAMB have their own trust ratio");
    return std::make_unique<Larc>(larc, std::move(base_opt));
  }
  config.fail("optimizer.name", "one of: " + join(optimizer_names()), "'" + name + "'");
}

}  // namespace lbt::optim
