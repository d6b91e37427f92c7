// Work split across the OpenMP threads in contiguous ranges: elementwise passes (ReLU,
// residual additions) only when large enough to pay for the fork, and the fully connected
// layer's small-batch products from core/gemm.hpp's kSplitAboveFlops.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/gemm.hpp"

namespace lbt::nn {

// 2^15 floats (128 KB): the MLP's 128 x 512 ReLU passes took 0.040 ms on one thread and
// 0.025 on two (bench_layer_times, AVX-512 EPYC): half of a GEMM's output sits in the other
// core's cache, so splitting pays well below the 2^18 it was.
inline constexpr std::int64_t kParallelElementsAbove = 1 << 15;

// f(begin, end) on each thread's share of [0, n), shares in multiples of `grain`; one call
// f(0, n) when the work is not worth a fork (`worth_a_fork` false), inside a parallel region, or
// with one thread. No more threads wake than there are grains to share.
template <class F>
void split_ranges(std::int64_t n, std::int64_t grain, bool worth_a_fork, F&& f) {
  const std::int64_t grains = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), grains));
  if (!worth_a_fork || omp_in_parallel() || threads <= 1) return f(std::int64_t{0}, n);
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t share = (n + threads - 1) / threads, t = omp_get_thread_num();
    const std::int64_t chunk = (share + grain - 1) / grain * grain;
    const std::int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) f(begin, end);
  }
}

// Whether a product of 2 m n k flops is worth splitting (core/gemm.hpp's bound).
inline bool worth_splitting(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >=
         kSplitAboveFlops;
}

// f(begin, count) over [0, n): one call when n is small, else one per thread, in 64-byte
// (16-float) aligned chunks.
template <class F>
void parallel_chunks(std::int64_t n, F&& f) {
  split_ranges(n, 16, n >= kParallelElementsAbove,
               [&](std::int64_t begin, std::int64_t end) { f(begin, end - begin); });
}

}  // namespace lbt::nn
