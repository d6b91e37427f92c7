// Squared L2 norm of a float array, accumulated in double.
#pragma once
#include <cstddef>
#include <span>

namespace lbt {

// Sum of v[i]^2 in double. Thirty-two independent accumulators (four AVX-512 registers): a
// single running sum waits on the add latency every element, which made the gradient norm 8%
// of an MLP step (perf, 784-512-512-10 at batch 128). The result depends only on v, never on
// threads or alignment.
inline double sum_squares(const float* v, std::size_t n) {
  constexpr std::size_t kLanes = 32;
  double lanes[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::size_t j = 0; j < kLanes; ++j)
      lanes[j] += static_cast<double>(v[i + j]) * static_cast<double>(v[i + j]);
  }
  for (std::size_t j = 0; i < n; ++i, ++j) lanes[j] += static_cast<double>(v[i]) * v[i];
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)  // pairwise: fixed order
    for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

inline double sum_squares(std::span<const float> v) {
  return sum_squares(v.data(), v.size());
}

}  // namespace lbt
