// What a run on model.device = "cuda" can be today (trainer/device_step.hpp, docs/gpu.md): one
// process, an MLP of Linear (with bias) and ReLU layers, softmax cross-entropy, every optimizer
// and schedule, a fixed or planned batch, targets, checkpoints and resume. Anything else is a
// ConfigError naming the key and the fix, before any file is written.
#pragma once
#include <cstdint>
#include <vector>

#include "trainer/config/run_config.hpp"

namespace lbt::trainer {

// The widths IN, H1, ..., OUT of the run's Linear/ReLU stack on `run.train.device` (input_dim:
// the data's example size, for a layer list that does not name its input). Throws ConfigError
// for anything the device cannot run. Not called for cpu.
std::vector<std::int64_t> device_mlp_widths(const RunConfig& run, int ranks,
                                            std::int64_t input_dim);

}  // namespace lbt::trainer
