// The Hessian-weighted noise scale B_noise = tr(H Sigma) / (G^T H G) probed during a run
// (McCandlish et al. 2018, arXiv:1812.06162, eq. 2.8; noise/hessian_noise.hpp): `lbt noise` at
// --at-steps, and `lbt train` / sweep trials every noise.hessian.every steps. Each probe writes
// a noise.jsonl line with estimator "hessian", b_noise and its 95% interval, and B_simple on the
// same small batches with its own.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/config.hpp"
#include "experiments/train_run.hpp"
#include "noise/hessian_noise.hpp"

namespace lbt::experiments {

struct HessianOptions {
  bool enabled = true;              // noise.hessian.enabled (lbt noise's --at-steps)
  std::int64_t every = 0;           // also probe on steps with step % every == 0 (0: never)
  std::int64_t small_batches = 16;  // K small-batch gradients behind B_noise and its interval
  std::int64_t examples = 2048;     // examples behind each gradient of the HVP oracle
};

// Reads the noise.hessian.* keys (noise/noise_keys.cpp) and checks them.
HessianOptions read_hessian_options(Config& config);

// Probes B_noise at the current parameters (the top of `step`) and appends the line. Parameters
// and BatchNorm statistics are restored; gradients are scratch here.
void probe_b_noise(std::int64_t step, ProbeContext& ctx, const HessianOptions& h);

// B_simple = tr(Sigma) / |G|^2 from the probe's K small-batch gradients (batch b each), beside
// B_noise: eq. 2.9, which is eq. 2.8 with H = I, i.e. the same unbiased estimator and Fieller
// interval over the Gram matrix g_k^T g_l (B_noise = B_simple where the Hessian is a multiple of
// the identity). Its estimate is the spread form b sum_k |g_k - mean|^2 / (K - 1) over |mean|^2 -
// tr(Sigma) / (K b).
noise::HessianNoise b_simple_of_batches(const std::vector<std::vector<float>>& small,
                                        std::int64_t b);

// A RunOptions::probe that probes at `at_steps` (when h.enabled) and every h.every steps;
// empty when neither asks for a probe.
std::function<void(std::int64_t, ProbeContext&)> hessian_probe(
    const HessianOptions& h, const std::vector<std::int64_t>& at_steps);

}  // namespace lbt::experiments
