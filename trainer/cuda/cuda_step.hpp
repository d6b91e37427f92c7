// The DeviceStep of model.device = "cuda" (trainer/device_step.hpp): an MLP or a convolutional
// stack on one NVIDIA GPU per rank (nn/cuda/device_mlp.hpp, device_net.hpp) with every
// optimizer's fused step (optim/cuda/), the gradient's average over the ranks and its norm
// (gradient_allreduce.hpp) and the weights' EMA on the device; the validation split uploaded once
// and evaluated there (whole, on every rank).
#pragma once
#include <memory>

#include "trainer/device_placement.hpp"
#include "trainer/device_step.hpp"

namespace lbt::trainer::cuda {

// On the device lbt::cuda::select_device chose, reducing by `placement.reduction` over
// setup.comm (collective where that is not kNone). Throws ConfigError (no GPU) or an optimizer's
// ConfigError; checks nothing against the CPU but the ranks' exact-sum check
// (gradient_allreduce.hpp); experiments/cuda_training.hpp does, once per device and build.
std::unique_ptr<DeviceStep> make_cuda_step(const DeviceStepSetup& setup,
                                           const DevicePlacement& placement);

}  // namespace lbt::trainer::cuda
