// Glue between the model/run directory and noise::OnlineEstimator: whether per-example norms are
// exact for the model, the Linear and Conv2d taps the per-example estimator reads, the method
// line and the noise.jsonl lines (one per estimator per report).
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "nn/model.hpp"
#include "noise/online_estimator.hpp"
#include "trainer/run_dir.hpp"

namespace lbt::trainer {

// Per-example norms are exact when every parameter is in a Linear or Conv2d layer and no
// layer couples the examples of a batch (Layer::couples_examples: BatchNorm); on a device
// (model.device=cuda), only for an MLP of Linear layers with biases and ReLUs (the GPU's
// per-example sums are its MLP's).
noise::PerExampleSupport per_example_support(const nn::Model& model,
                                             const std::string& device = "cpu");

// Each Linear and Conv2d layer's input and output delta from the last forward/backward on
// input `x` (no allocation after the first call).
struct TapBuffers {
  std::vector<noise::LinearTap> linear;
  std::vector<noise::ConvTap> conv;
};
noise::ExampleTaps example_taps(const nn::Model& model, const float* x, TapBuffers& taps);

// noise.jsonl line for one estimator:
//   {"step", "estimator", "b_small", "B_big", "G_sq", "G_sq_ci95", "trace_sigma",
//    "trace_sigma_ci95", "G_sq_step", "trace_sigma_step", "b_simple", "b_simple_ci95": [low,
//    high], the same "_ema" fields, "n_eff_ema", "samples", "segments": {name: {"b_simple",
//    "ci95", "G_sq", "G_sq_ci95", "trace_sigma", "trace_sigma_ci95"}} (when noise.per_segment)}
nlohmann::json noise_json(const noise::NoiseReport& report, const noise::EstimatorReport& e,
                          std::int64_t window_steps);

// Says once, on rank 0, which estimators run and why (stderr and noise.jsonl's first line,
// {"method", "reason", "note"}), "note" saying what cannot be measured.
void log_noise_note(const noise::OnlineEstimator& estimator, RunDirectory* run_dir, bool rank0);

// Appends the report's lines to noise.jsonl (when run_dir is set).
void log_noise(const noise::NoiseReport& report, std::int64_t window_steps, RunDirectory* run_dir);

}  // namespace lbt::trainer
