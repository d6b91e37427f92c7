// Reading the optimizer.* keys into OptimizerOptions, and the optimizer factory; see
// optimizer_options.hpp.
#include "optim/optimizer_options.hpp"

#include <cmath>

#include "core/error.hpp"
#include "optim/optimizer_keys.hpp"
#include "optim/phi_config.hpp"

namespace lbt::optim {
namespace {

const KeySpec& key(std::string_view name) {
  return Schema::in(optimizer_keys(), name);
}

double read(Config& config, const char* name) {
  return config.get_double(key(name));
}

SgdOptions read_sgd(Config& config, const std::string& name, bool read_decay) {
  SgdOptions o;
  o.momentum = read(config, "optimizer.momentum");
  o.dampening = read(config, "optimizer.dampening");
  o.nesterov = name == "nesterov" || config.get_bool(key("optimizer.nesterov"));
  if (read_decay) o.weight_decay = read(config, "optimizer.weight_decay");
  validate(o, config);
  return o;
}

// Adam's moment keys, shared by Adam, AdamW and LAMB.
template <class Options>
void read_adam_moments(Config& config, Options& o) {
  o.beta1 = read(config, "optimizer.beta1");
  o.beta2 = read(config, "optimizer.beta2");
  o.eps = read(config, "optimizer.eps");
}

AdamOptions read_adam(Config& config, const std::string& name, bool read_decay) {
  AdamOptions o;
  o.decoupled = name == "adamw";
  read_adam_moments(config, o);
  o.eps_inside_sqrt = config.get_bool(key("optimizer.eps_inside_sqrt"));
  o.weight_decay = read_decay ? read(config, "optimizer.weight_decay") : 0.0;
  validate(o, config);
  return o;
}

LarsOptions read_lars(Config& config) {
  LarsOptions o;
  o.momentum = read(config, "optimizer.momentum");
  o.weight_decay = read(config, "optimizer.weight_decay");
  o.trust_coefficient = read(config, "optimizer.lars.trust_coefficient");
  o.eps = read(config, "optimizer.lars.eps");
  o.denominator = config.get_string(key("optimizer.lars.denominator")) == "exact"
                      ? LarsDenominator::kExact
                      : LarsDenominator::kPaper;
  o.lr_placement = config.get_string(key("optimizer.lars.lr_placement")) == "after_momentum"
                       ? LarsLrPlacement::kAfterMomentum
                       : LarsLrPlacement::kBeforeMomentum;
  o.safe_zero_norm = config.get_bool(key("optimizer.lars.safe_zero_norm"));
  o.phi = read_phi_options(config, "optimizer.lars");
  validate(o, config);
  return o;
}

LarcOptions read_larc(Config& config) {
  LarcOptions o;
  o.mode =
      config.get_string(key("optimizer.larc.mode")) == "scale" ? LarcMode::kScale : LarcMode::kClip;
  o.trust_coefficient = read(config, "optimizer.larc.trust_coefficient");
  o.eps = read(config, "optimizer.larc.eps");
  o.weight_decay = read(config, "optimizer.weight_decay");
  validate(o, config);
  return o;
}

LambOptions read_lamb(Config& config) {
  LambOptions o;
  read_adam_moments(config, o);
  o.bias_correction = config.get_bool(key("optimizer.lamb.bias_correction"));
  o.weight_decay = read(config, "optimizer.weight_decay");
  o.scope = config.get_string(key("optimizer.lamb.scope")) == "decayed" ? LambScope::kDecayed
                                                                        : LambScope::kSegment;
  o.phi = read_phi_options(config, "optimizer.lamb");
  validate(o, config);
  return o;
}

bool is_sgd(const std::string& name) {
  return name == "sgd" || name == "momentum" || name == "nesterov";
}

// A base optimizer that LARC can wrap; under LARC its own decay stays 0 (Apex).
std::unique_ptr<SegmentwiseOptimizer> make_segmentwise(const OptimizerOptions& o,
                                                       const std::string& name,
                                                       std::size_t num_params) {
  if (is_sgd(name)) return std::make_unique<Sgd>(o.sgd, num_params);
  if (name == "adam" || name == "adamw") return std::make_unique<Adam>(o.adam, num_params);
  return nullptr;
}

}  // namespace

OptimizerOptions read_optimizer_options(Config& config) {
  OptimizerOptions o;
  o.name = config.get_string(key("optimizer.name"));
  o.lr = read(config, "optimizer.lr");
  if (!(o.lr > 0.0) || !std::isfinite(o.lr)) {
    config.fail("optimizer.lr", "a positive finite number", std::to_string(o.lr),
                "try --set optimizer.lr=0.05");
  }
  const bool larc = o.name == "larc";
  if (larc) {
    o.larc = read_larc(config);
    o.larc_base = config.get_string(key("optimizer.larc.base"));
  }
  const std::string& base = larc ? o.larc_base : o.name;
  if (is_sgd(base)) o.sgd = read_sgd(config, base, !larc);
  if (base == "adam" || base == "adamw") o.adam = read_adam(config, base, !larc);
  if (o.name == "lars") o.lars = read_lars(config);
  if (o.name == "lamb") o.lamb = read_lamb(config);
  o.no_decay = config.get_string_list(key("optimizer.no_decay"));
  o.no_trust_ratio = config.get_string_list(key("optimizer.no_trust_ratio"));
  return o;
}

namespace {

std::unique_ptr<Optimizer> build_optimizer(const OptimizerOptions& o, std::size_t num_params) {
  if (o.name == "lars") return std::make_unique<Lars>(o.lars, num_params);
  if (o.name == "lamb") return std::make_unique<Lamb>(o.lamb, num_params);
  if (o.name == "larc") {
    auto base = make_segmentwise(o, o.larc_base, num_params);
    if (!base) {
      throw ConfigError(
          "optimizer.larc.base must be sgd, momentum, nesterov, adam or adamw, got '" +
              o.larc_base + "'",
          "LARC wraps a per-element optimizer; LARS and LAMB have their own trust ratio");
    }
    return std::make_unique<Larc>(o.larc, std::move(base));
  }
  if (auto opt = make_segmentwise(o, o.name, num_params)) return opt;
  throw ConfigError("optimizer.name '" + o.name + "' is not an optimizer lbt has",
                    "lbt train --help lists the optimizers");
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o, std::size_t num_params,
                                          const Device& device) {
  require_host_memory(device, "the optimizer's fused step");
  auto optimizer = build_optimizer(o, num_params);
  optimizer->state().place_on(device);
  return optimizer;
}

}  // namespace lbt::optim
