// The optimizer.* key table; see optimizer_keys.hpp. Defaults equal the option structs'
// (sgd.hpp, adam.hpp, ...): tests/optim/test_optim_state_config.cpp checks that they agree.
#include "optim/optimizer_keys.hpp"

#include "core/config.hpp"

namespace lbt::optim {
namespace {

// The optimizer in use, and under LARC also the optimizer it wraps: {"larc", "adamw"}.
std::vector<std::string> optimizer_in_use(const Config& config) {
  std::string name = config.peek_string("optimizer.name", "sgd");
  if (name == "larc") return {name, config.peek_string("optimizer.larc.base", "sgd")};
  return {name};
}

// LARC's base takes its own keys from [optimizer] too: --help listed momentum as sgd's, momentum's,
// nesterov's and lars's only (2026-11-29 audit).
const KeyCondition kByOptimizer{{"optimizer.name", "optimizer.larc.base"},
                                optimizer_in_use,
                                "optimizer.name (or, under larc, optimizer.larc.base)"};
// The trust-ratio exclusions beside an optimizer without one were taken without a word
// (2026-11-30 audit); read under every optimizer, so the default passes.
const KeyCondition kByOptimizerReadAlways{
    {"optimizer.name"}, optimizer_in_use, "optimizer.name", true};

}  // namespace

const std::vector<KeySpec>& optimizer_keys() {
  using enum KeyType;
  const KeyCondition* by = &kByOptimizer;
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"optimizer.name", kString, "\"sgd\"", "the optimizer",
       {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "larc", "lamb"}},
      {"optimizer.lr", kNumber, "0.05",
       "base learning rate, at schedule.reference_batch (before the scaling rule and schedule)"},
      {"optimizer.momentum", kNumber, "0.9", "momentum coefficient in [0, 1)", {}, "", by,
       {"sgd", "momentum", "nesterov", "lars"}},
      {"optimizer.dampening", kNumber, "0.0",
       "momentum dampening in [0, 1) (PyTorch SGD); 0 with nesterov", {}, "", by,
       {"sgd", "momentum", "nesterov"}},
      {"optimizer.nesterov", kBool, "false", "Nesterov momentum (d = g + momentum * buf)", {}, "",
       by, {"sgd", "momentum"}},
      {"optimizer.weight_decay", kNumber, "0.0",
       "weight decay >= 0: coupled L2 for sgd/adam/larc, decoupled for adamw/lamb, beta for lars",
       {}, "", by, {}, {{"larc", "0.0"}, {"lars", "0.0005"}, {"lamb", "0.01"}, {"adamw", "0.01"}}},
      {"optimizer.beta1", kNumber, "0.9", "first-moment decay in [0, 1)", {}, "", by,
       {"adam", "adamw", "lamb"}},
      {"optimizer.beta2", kNumber, "0.999", "second-moment decay in [0, 1)", {}, "", by,
       {"adam", "adamw", "lamb"}},
      {"optimizer.eps", kNumber, "1e-08", "denominator epsilon > 0", {}, "", by,
       {"adam", "adamw", "lamb"}, {{"lamb", "1e-06"}}},
      {"optimizer.eps_inside_sqrt", kBool, "false",
       "sqrt(v_hat + eps) instead of sqrt(v_hat) + eps", {}, "", by, {"adam", "adamw"}},
      {"optimizer.no_decay", kStringList, "[]",
       "glob patterns (* and ?) of segment names without weight decay, on top of biases and norms (which never have it)"},
      {"optimizer.no_trust_ratio", kStringList, "[]",
       "glob patterns of segment names without the LARS/LAMB/LARC trust ratio", {}, "",
       &kByOptimizerReadAlways, {"lars", "lamb", "larc"}},
      {"optimizer.lars.trust_coefficient", kNumber, "0.001",
       "trust coefficient eta > 0 (paper: 0.001)", {}, "", by, {"lars"}},
      {"optimizer.lars.eps", kNumber, "0.0", "added to the trust-ratio denominator, >= 0", {}, "",
       by, {"lars"}},
      {"optimizer.lars.denominator", kString, "\"paper\"",
       "paper: |g| + beta*|w|; exact: |g + beta*w| (optax)", {"paper", "exact"}, "", by, {"lars"}},
      {"optimizer.lars.lr_placement", kString, "\"before_momentum\"",
       "before_momentum: v = m v + lr*local_lr*d, w -= v (paper Alg. 1); after_momentum: v = m v + local_lr*d, w -= lr*v (timm, MoCo v3)",
       {"before_momentum", "after_momentum"}, "", by, {"lars"}},
      {"optimizer.lars.safe_zero_norm", kBool, "true",
       "trust ratio 1 when |w| or the denominator is 0 (optax)", {}, "", by, {"lars"}},
      {"optimizer.lars.phi", kString, "\"identity\"",
       "trust-ratio scaling: identity, or clamp |w| / |u| to [clamp_min, clamp_max] before eta", {"identity", "clamp"},
       "", by, {"lars"}},
      {"optimizer.lars.clamp_min", kNumber, "0.01", "phi = clamp: lower clamp of the trust ratio",
       {}, "", by, {"lars"}},
      {"optimizer.lars.clamp_max", kNumber, "10.0", "phi = clamp: upper clamp of the trust ratio",
       {}, "", by, {"lars"}},
      {"optimizer.larc.base", kString, "\"sgd\"", "the optimizer LARC wraps",
       {"sgd", "momentum", "nesterov", "adam", "adamw"}, "", by, {"larc"}},
      {"optimizer.larc.mode", kString, "\"clip\"",
       "clip: factor min(local_lr / lr, 1); scale: factor local_lr", {"clip", "scale"}, "", by,
       {"larc"}},
      {"optimizer.larc.trust_coefficient", kNumber, "0.02", "trust coefficient > 0 (Apex: 0.02)",
       {}, "", by, {"larc"}},
      {"optimizer.larc.eps", kNumber, "1e-08", "added to the local-lr denominator, >= 0", {}, "",
       by, {"larc"}},
      {"optimizer.lamb.bias_correction", kBool, "true", "divide m, v by 1 - beta^t (Alg. 2)", {},
       "", by, {"lamb"}},
      {"optimizer.lamb.scope", kString, "\"segment\"",
       "where the trust ratio applies: segment (its flag, optax) or decayed (decayed segments only, timm)",
       {"segment", "decayed"}, "", by, {"lamb"}},
      {"optimizer.lamb.phi", kString, "\"identity\"",
       "trust-ratio scaling: identity, or clamp to [clamp_min, clamp_max]", {"identity", "clamp"},
       "", by, {"lamb"}},
      {"optimizer.lamb.clamp_min", kNumber, "0.01", "phi = clamp: lower clamp of the trust ratio",
       {}, "", by, {"lamb"}},
      {"optimizer.lamb.clamp_max", kNumber, "10.0", "phi = clamp: upper clamp of the trust ratio",
       {}, "", by, {"lamb"}},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::optim
