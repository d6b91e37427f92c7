// The noise.* key table; see noise_keys.hpp.
#include "noise/noise_keys.hpp"

namespace lbt::noise {

const std::vector<KeySpec>& noise_keys() {
  using enum KeyType;
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"noise.enabled", kBool, "false",
       "measure the gradient noise scale B_simple during training (noise.jsonl; lbt noise: on)"},
      {"noise.every", kInt, "10", "measure on every N-th optimizer step", {}, "steps"},
      {"noise.estimator", kString, "\"both\"", "which estimators run",
       {"two_batch", "per_example", "both"}},
      {"noise.ema", kNumber, "0.95",
       "EMA decay of |G|^2 and tr(Sigma) (bias-corrected; 0.95 ~ last 39 estimates)"},
      {"noise.window_steps", kInt, "100",
       "b_simple (\"now\") is over the measurements of the last N steps (at least 3 x "
       "noise.every: three make its line); b_simple_ema averages over training", {}, "steps"},
      {"noise.per_segment", kBool, "false", "also report B_simple per parameter tensor"},
      {"noise.small_batches", kString, "\"auto\"",
       "one process with accum_steps >= 2: two_batch's small batches are micro-batch 0 (first: one read of a gradient the step computed) or every micro-batch (all: accum samples a step, one gradient copy); auto: first at accum_steps = 2, all from 3 (the cheaper per unit of precision), all in lbt noise",
       {"auto", "all", "first"}},
      {"noise.hessian.enabled", kBool, "true",
       "lbt noise: measure the Hessian-weighted B_noise at --at-steps"},
      {"noise.hessian.every", kInt, "0",
       "lbt train / sweep trials with noise.enabled: also measure B_noise every N steps (0: never)",
       {}, "steps"},
      {"noise.hessian.small_batches", kInt, "16",
       "lbt noise: small-batch gradients K (3 to 1024) behind B_noise and its jackknife interval at --at-steps"},
      {"noise.hessian.examples", kInt, "2048",
       "lbt noise: examples per gradient in the Hessian-vector products", {}, "examples"},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::noise
