// CudaGradientReader: the sums of noise/cuda/gradient_reader.hpp, segment by segment.
#include "noise/cuda/gradient_reader.hpp"

#include <algorithm>

namespace lbt::noise::cuda {

CudaGradientReader::CudaGradientReader(const lbt::cuda::Gpu& gpu, const float* grads,
                                       std::vector<Segment> segments)
    : gpu_(gpu), grads_(grads), segments_(std::move(segments)) {}

void CudaGradientReader::segment_sq_norms(std::span<double> out) {
  for (std::size_t s = 0; s < segments_.size(); ++s)
    out[s] = gpu_.sum_squares(grads_ + segments_[s].offset, segments_[s].size);
}

void CudaGradientReader::segment_change_sq_norms(std::span<double> out, bool first, bool last) {
  if (previous_.size() == 0) {
    std::size_t n = 0;
    for (const Segment& s : segments_) n = std::max(n, s.offset + s.size);
    previous_ = lbt::cuda::DeviceArray<float>(n);
  }
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const float* cur = grads_ + segments_[s].offset;
    float* prev = previous_.data() + segments_[s].offset;
    const std::size_t n = segments_[s].size;
    if (first) {  // p = 0: the buffer's own norm, then the buffer becomes p
      out[s] = gpu_.sum_squares(cur, n);
      if (!last) lbt::cuda::copy_on_device(prev, cur, n * sizeof(float));
    } else {
      out[s] = gpu_.sum_squared_change(cur, prev, n, /*keep=*/!last);
    }
  }
}

}  // namespace lbt::noise::cuda
