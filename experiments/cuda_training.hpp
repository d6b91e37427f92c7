// lbt-cuda's part of model.device = "cuda" (cli/cuda_main.cpp): registers the GPU's DeviceStep
// (trainer/cuda/) behind the self-check the issue asks of GPU code: before a run's first step
// on a GPU, the whole `lbt doctor --device cuda` check (experiments/device_check.hpp) runs once
// per device, driver libraries and build, its table cached; a device that disagrees with the
// CPU backend is refused (DeviceError, exit 4) and trains nothing.
#pragma once

namespace lbt::experiments {

void register_cuda_training();

}  // namespace lbt::experiments
