// OptimizerState and the optimizer factory; see optimizer.hpp.
#include "optim/optimizer.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/sgd.hpp"

namespace lbt::optim {

AlignedBuffer& OptimizerState::add(const std::string& name, std::size_t size) {
  buffers_.emplace_back(name, AlignedBuffer(size));
  return buffers_.back().second;
}

AlignedBuffer& OptimizerState::get(const std::string& name) {
  for (auto& [n, buffer] : buffers_) {
    if (n == name) return buffer;
  }
  throw Error("optimizer state has no buffer '" + name + "'");
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
  std::string name = config.get_string("optimizer.name", "sgd", "sgd (momentum via optimizer.momentum)");
  if (name == "sgd" || name == "momentum") {
    return std::make_unique<Sgd>(read_sgd_options(config), num_params);
  }
  config.fail("optimizer.name", "one of: sgd, momentum", "'" + name + "'");
}

}  // namespace lbt::optim
