// The noise.* key table; see noise_keys.hpp.
#include "noise/noise_keys.hpp"

#include "core/config.hpp"

namespace lbt::noise {
namespace {

// The estimator's settings beside noise.enabled = false were taken without a word (2026-11-30
// audit). A sweep's adaptive arm turns it on for its trials. Read either way, so the defaults
// pass (resolved configs hold them).
std::vector<std::string> noise_on(const Config& config) {
  const bool on =
      config.peek_bool("noise.enabled", false) || config.peek_bool("sweep.adaptive", false);
  return {on ? "true" : "false"};
}
const KeyCondition kByNoise{{"noise.enabled"}, noise_on, "noise.enabled (or sweep.adaptive)", true};

}  // namespace

const std::vector<KeySpec>& noise_keys() {
  using enum KeyType;
  const KeyCondition* on = &kByNoise;
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"noise.enabled", kBool, "false",
       "measure the gradient noise scale B_simple during training (noise.jsonl; lbt noise: on)"},
      {"noise.every", kInt, "10", "measure on every N-th optimizer step", {}, "steps", on, {"true"}},
      {"noise.estimator", kString, "\"both\"", "which estimators run",
       {"two_batch", "per_example", "both"}, "", on, {"true"}},
      {"noise.ema", kNumber, "0.95",
       "EMA decay of |G|^2 and tr(Sigma) (bias-corrected; 0.95 ~ last 39 estimates)", {}, "", on, {"true"}},
      {"noise.window_steps", kInt, "100",
       "b_simple (\"now\") is over the measurements of the last N steps (at least 3 x "
       "noise.every: three make its line); b_simple_ema averages over training", {}, "steps", on, {"true"}},
      {"noise.per_segment", kBool, "false", "also report B_simple per parameter tensor", {}, "", on, {"true"}},
      {"noise.small_batches", kString, "\"auto\"",
       "one process with accum_steps >= 2: two_batch's small batches are micro-batch 0 (first: one read of a gradient the step computed) or every micro-batch (all: accum samples a step, one gradient copy); auto: first at accum_steps = 2, all from 3 (the cheaper per unit of precision), all in lbt noise",
       {"auto", "all", "first"}, "", on, {"true"}},
      {"noise.hessian.enabled", kBool, "true",
       "lbt noise: measure the Hessian-weighted B_noise at --at-steps", {}, "", on, {"true"}},
      {"noise.hessian.every", kInt, "0",
       "lbt train / sweep trials with noise.enabled: also measure B_noise every N steps (0: never)",
       {}, "steps", on, {"true"}},
      {"noise.hessian.small_batches", kInt, "16",
       "lbt noise: small-batch gradients K (3 to 1024) behind B_noise and its jackknife interval at --at-steps",
       {}, "", on, {"true"}},
      {"noise.hessian.examples", kInt, "2048",
       "lbt noise: examples per gradient in the Hessian-vector products", {}, "examples", on, {"true"}},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::noise
