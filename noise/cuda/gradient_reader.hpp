// The noise estimator's reads of a gradient that lives on the GPU (noise/gradient_reader.hpp):
// per-segment sums of squares in double on the device, one kernel per segment, each summed per
// block and then in block order (the same value every run). The previous micro-batch's buffer
// is a device copy made at the first change read. g++-compiled: no CUDA header.
#pragma once
#include <vector>

#include "core/cuda/gpu.hpp"
#include "noise/gradient_reader.hpp"

namespace lbt::noise::cuda {

class CudaGradientReader final : public GradientReader {
 public:
  // `grads`: the device's flat gradient buffer, laid out by `segments`.
  CudaGradientReader(const lbt::cuda::Gpu& gpu, const float* grads, std::vector<Segment> segments);
  void segment_sq_norms(std::span<double> out) override;
  void segment_change_sq_norms(std::span<double> out, bool first, bool last) override;

 private:
  const lbt::cuda::Gpu& gpu_;
  const float* grads_;
  std::vector<Segment> segments_;
  lbt::cuda::DeviceArray<float> previous_;
};

}  // namespace lbt::noise::cuda
