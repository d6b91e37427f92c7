// What a run on model.device = "cuda" can be today (trainer/device_step.hpp, docs/gpu.md): one
// process or several (a GPU each, or sharing GPUs: device_placement.hpp); a model of Linear, ReLU,
// convolution, BatchNorm, residual-block and pooling layers (windows side by side), no dropout;
// softmax cross-entropy; every optimizer and schedule, a fixed, planned or adaptive batch,
// targets, checkpoints and resume; the noise scale by two_batch, and per_example for an MLP.
// Anything else is a ConfigError naming the key and the fix, before any file is written.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/layer_spec.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::trainer {

// The model a device runs: its layers, the example's shape they take, and where they are a
// Linear (with bias) / ReLU stack, its widths IN, H1, ..., OUT (the GPU's MLP); else empty.
struct DeviceModelPlan {
  std::vector<nn::LayerSpec> layers;
  std::vector<std::int64_t> input_shape;  // [C, H, W], or [features]
  std::vector<std::int64_t> mlp_widths;
};

// data_shape: one example's shape as the data gives it (empty before the data is loaded: the
// spec's own). Throws ConfigError for anything `run.train.device` cannot run. Not for cpu.
DeviceModelPlan device_model_plan(const RunConfig& run,
                                  const std::vector<std::int64_t>& data_shape);

}  // namespace lbt::trainer
