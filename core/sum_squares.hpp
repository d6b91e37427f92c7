// Squared L2 norm of a float array, accumulated in double.
#pragma once
#include <cstddef>
#include <span>

namespace lbt {
namespace detail {

// Sum of value(i)^2 over i < n in double, in 32 independent accumulators (four AVX-512
// registers): a single running sum waits on the add latency every element, which made the
// gradient norm 8% of an MLP step (perf, 784-512-512-10 at batch 128). The lanes are added
// pairwise in a fixed order, so the result depends only on the values.
template <class Value>
double lane_sum_squares(std::size_t n, Value&& value) {
  constexpr std::size_t kLanes = 32;
  double lanes[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::size_t j = 0; j < kLanes; ++j) {
      const double x = value(i + j);
      lanes[j] += x * x;
    }
  }
  for (std::size_t j = 0; i < n; ++i, ++j) {
    const double x = value(i);
    lanes[j] += x * x;
  }
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)
    for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

}  // namespace detail

inline double sum_squares(const float* v, std::size_t n) {
  return detail::lane_sum_squares(n, [v](std::size_t i) { return v[i]; });
}

inline double sum_squares(std::span<const float> v) {
  return sum_squares(v.data(), v.size());
}

// v *= scale, returning the sum of the scaled squares: one pass where scaling and then norming
// would read the buffer twice (the gradient average after an MPI sum).
inline double scale_and_sum_squares(float* v, std::size_t n, float scale) {
  return detail::lane_sum_squares(n, [v, scale](std::size_t i) { return v[i] *= scale; });
}

}  // namespace lbt
