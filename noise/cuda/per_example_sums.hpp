// The per-example estimator's sums (noise/per_example.hpp) for Linear layers whose inputs and
// output gradients live on the GPU: per layer, sum_n |x_n|^2 |delta_n|^2 (weight) and
// sum_n |delta_n|^2 (bias), one thread per example (noise/per_example_rule.hpp's arithmetic),
// then the examples added in order on the device (the same sums every run). Only those two
// numbers per layer cross to the host. g++-compiled callers: no CUDA header.
#pragma once
#include <cstdint>
#include <span>

#include "core/cuda/gpu.hpp"
#include "noise/per_example.hpp"

namespace lbt::noise::cuda {

class CudaPerExampleSums {
 public:
  explicit CudaPerExampleSums(std::int64_t max_batch);
  // taps: device pointers (x [batch, in], dy [batch, out] as the loss scaled it). Adds each
  // layer's sums into segment_sums[weight_segment] and [bias_segment] (host), as
  // add_per_example_sq_norms does on the host; returns their total.
  double add(std::span<const LinearTap> taps, std::int64_t batch, double grad_scale,
             std::span<double> segment_sums);

 private:
  lbt::cuda::DeviceArray<double> rows_;  // [max_batch][2]: each example's weight and bias share
  lbt::cuda::DeviceArray<double> sums_;  // [2]
};

}  // namespace lbt::noise::cuda
