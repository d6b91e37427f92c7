// Every optimizer of optim/ stepping flat buffers that live on the GPU: the per-segment scalars
// (trust ratios, LARC's factors, bias corrections) computed on the host by the CPU optimizers'
// own functions, the per-element update by optim/update_rules.hpp in CUDA kernels (kernels.hpp).
// State ("momentum", "m", "v") stays on the device for the whole run.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/params.hpp"
#include "optim/optimizer_options.hpp"

namespace lbt::optim::cuda {

class DeviceOptimizer {
 public:
  // `segments`: the model's table after apply_exclusions. Throws ConfigError for a LARC base
  // other than sgd, momentum, nesterov, adam or adamw.
  DeviceOptimizer(const lbt::cuda::Gpu& gpu, const OptimizerOptions& options,
                  std::vector<Segment> segments, std::size_t num_params);
  ~DeviceOptimizer();
  // params and grads: device pointers to [num_params] floats; step is 0-based (optimizer.hpp).
  void step(float* params, const float* grads, double lr, std::int64_t step);
  // A state buffer copied to the host, or empty when the optimizer keeps none of that name.
  std::vector<float> state(const std::string& name) const;
  // Overwrites a state buffer from the host (a checkpoint or snapshot restored); a name the
  // optimizer keeps none of, or a size that differs, is an Error.
  void set_state(const std::string& name, std::span<const float> values);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lbt::optim::cuda
