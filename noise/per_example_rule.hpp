// Example n's share of a Linear layer's per-example squared gradient norms (per_example.hpp),
// written once for both backends: the host's loop (per_example.cpp) and the GPU's kernel
// (noise/cuda/per_example_sums.cu) call it with the example's |x_n|^2 and |dy_n|^2 (float sums
// of its row), so the CPU's tests of the per-example estimator cover the GPU's arithmetic.
#pragma once
#include <cstdint>

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

// Example n of a Linear layer (x [batch, in], dy [batch, out]): its |x_n|^2 and |dy_n|^2 summed
// in float in index order, and its shares added to the sums. What one GPU thread computes
// (noise/cuda/per_example_sums.cu); tests/noise runs it on the CPU beside the host's loop.
LBT_HOST_DEVICE inline void add_example_row(const float* x, const float* dy, std::int64_t n,
                                            std::int64_t in, std::int64_t out, double inv_scale_sq,
                                            double& weight_sum, double& bias_sum) {
  float x_sq = 0.0f, dy_sq = 0.0f;
  for (std::int64_t i = 0; i < in; ++i) x_sq += x[n * in + i] * x[n * in + i];
  for (std::int64_t o = 0; o < out; ++o) dy_sq += dy[n * out + o] * dy[n * out + o];
  add_example_shares(x_sq, dy_sq, inv_scale_sq, weight_sum, bias_sum);
}

}  // namespace lbt::noise
