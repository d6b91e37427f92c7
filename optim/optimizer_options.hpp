// The typed optimizer options, resolved once from the optimizer.* keys (optimizer_keys.hpp):
// the parts below receive this struct, never the config.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/larc.hpp"
#include "optim/lars.hpp"
#include "optim/sgd.hpp"

namespace lbt::optim {

struct OptimizerOptions {
  std::string name = "sgd";  // sgd | momentum | nesterov | adam | adamw | lars | larc | lamb
  double lr = 0.05;          // base learning rate, before the scaling rule and the schedule
  // The options of `name` (and under LARC of its base); the others keep their defaults.
  SgdOptions sgd;
  AdamOptions adam;
  LarsOptions lars;
  LarcOptions larc;
  std::string larc_base = "sgd";
  LambOptions lamb;
  // Glob patterns of segment names without weight decay / trust ratio.
  std::vector<std::string> no_decay, no_trust_ratio;
};

// Reads and validates the keys of the chosen optimizer only (validation against the schema
// has already refused the others). Throws ConfigError naming the key.
OptimizerOptions read_optimizer_options(Config& config);

// Builds the optimizer with its state sized for `num_params` and allocated on `device` (the
// model's backend); the fused steps compute on host memory and refuse another device.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::size_t num_params,
                                          const Device& device = host_device());

// Applies no_decay and no_trust_ratio on top of the segment table's defaults. A pattern that
// matches no segment is a ConfigError (it is almost always a typo). Call once after the model
// is built.
void apply_exclusions(const OptimizerOptions& options, std::vector<Segment>& segments);

}  // namespace lbt::optim
