// Work split across the OpenMP threads in contiguous ranges: elementwise passes (ReLU,
// residual additions) only when large enough to pay for the fork, and the fully connected
// layer's small-batch products always.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace lbt::nn {

// 2^15 floats (128 KB): the MLP's 128 x 512 ReLU passes took 0.040 ms on one thread and
// 0.025 on two (bench_layer_times, AVX-512 EPYC): half of a GEMM's output sits in the other
// core's cache, so splitting pays well below the 2^18 it was.
inline constexpr std::int64_t kParallelElementsAbove = 1 << 15;

// f(begin, end) on each thread's share of [0, n), shares in multiples of `grain`; one call
// f(0, n) inside a parallel region or with one thread.
template <class F>
void split_ranges(std::int64_t n, std::int64_t grain, F&& f) {
  if (omp_in_parallel() || omp_get_max_threads() == 1) return f(std::int64_t{0}, n);
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t share = (n + threads - 1) / threads;
    const std::int64_t chunk = (share + grain - 1) / grain * grain;
    const std::int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) f(begin, end);
  }
}

// f(begin, count) over [0, n): one call when n is small, else one per thread, in 64-byte
// (16-float) aligned chunks.
template <class F>
void parallel_chunks(std::int64_t n, F&& f) {
  if (n < kParallelElementsAbove) return f(0, n);
  split_ranges(n, 16, [&](std::int64_t begin, std::int64_t end) { f(begin, end - begin); });
}

}  // namespace lbt::nn
