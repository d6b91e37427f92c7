// The DeviceStep of model.device = "cuda" (trainer/device_step.hpp): an MLP or a convolutional
// stack on one NVIDIA GPU (nn/cuda/device_mlp.hpp, device_net.hpp) with every optimizer's fused
// step (optim/cuda/), the gradient's norm and the weights' EMA on the device; the validation split
// uploaded once and evaluated there.
#pragma once
#include <memory>

#include "trainer/device_step.hpp"

namespace lbt::trainer::cuda {

// Throws ConfigError (no GPU) or an optimizer's ConfigError; checks nothing against the CPU
// (experiments/cuda_training.hpp does, once per device and build).
std::unique_ptr<DeviceStep> make_cuda_step(const DeviceStepSetup& setup);

}  // namespace lbt::trainer::cuda
