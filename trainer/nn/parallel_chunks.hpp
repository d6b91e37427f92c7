// Elementwise passes split across the OpenMP threads in 64-byte-aligned contiguous chunks, only
// when large enough to pay for the fork (ReLU, residual additions).
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace lbt::nn {

inline constexpr std::int64_t kParallelElementsAbove = 1 << 18;

// f(begin, count) over [0, n): one call when n is small or already inside a parallel region,
// else one call per thread.
template <class F>
void parallel_chunks(std::int64_t n, F&& f) {
  if (n < kParallelElementsAbove || omp_in_parallel()) return f(0, n);
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads / 16 * 16 + 16;
    const std::int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    f(begin, end - begin);
  }
}

}  // namespace lbt::nn
