// Example n's share of a Linear layer's per-example squared gradient norms (per_example.hpp),
// written once for both backends: the host's loop (per_example.cpp) and the GPU's kernel
// (noise/cuda/per_example_sums.cu) call it with the example's |x_n|^2 and |dy_n|^2 (float sums
// of its row), so the CPU's tests of the per-example estimator cover the GPU's arithmetic.
#pragma once
#include "core/host_device.hpp"

namespace lbt::noise {

// delta_n = dy_n / grad_scale: |g_n|^2 on the weight is |x_n|^2 |delta_n|^2, on the bias
// |delta_n|^2; both added to the running sums, in double.
LBT_HOST_DEVICE inline void add_example_shares(float x_sq, float dy_sq, double inv_scale_sq,
                                               double& weight_sum, double& bias_sum) {
  const double delta_sq = static_cast<double>(dy_sq) * inv_scale_sq;  // |delta_n|^2
  weight_sum += static_cast<double>(x_sq) * delta_sq;                 // |x_n|^2 |delta_n|^2
  bias_sum += delta_sq;                                               // |delta_n|^2
}

}  // namespace lbt::noise
