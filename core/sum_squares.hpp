// Sums over arrays in independent accumulator lanes, and the squared L2 norm built on them.
#pragma once
#include <cstddef>
#include <span>

namespace lbt {

// Sum of term(i) over i < n in `Lanes` independent accumulators of type Acc (32 doubles or 64
// floats: four AVX-512 registers). A single running sum, which is what `omp simd reduction`
// gives, waits on the add latency every vector: that made the gradient norm 8% of an MLP step
// (perf). The lanes are added pairwise in a fixed order, so the result depends only on the
// terms.
template <class Acc, std::size_t Lanes, class Term>
Acc lane_sum(std::size_t n, Term&& term) {
  Acc lanes[Lanes] = {};
  std::size_t i = 0;
  for (; i + Lanes <= n; i += Lanes) {
#pragma omp simd
    for (std::size_t j = 0; j < Lanes; ++j) lanes[j] += term(i + j);
  }
  for (std::size_t j = 0; i < n; ++i, ++j) lanes[j] += term(i);
  for (std::size_t width = Lanes / 2; width > 0; width /= 2)
    for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

// Sum of v[i]^2 in double, on the CPU path in use (sum_squares_isa.cpp: the gradient's norm is
// taken every step, and compiled for the baseline it ran two doubles to an instruction). Every
// path gives the same bits: x^2 of a float is exact in double and the lanes are fixed.
double sum_squares(const float* v, std::size_t n);

inline double sum_squares(std::span<const float> v) {
  return sum_squares(v.data(), v.size());
}

// v *= scale, returning the sum of the scaled squares: one pass where scaling and then norming
// would read the buffer twice (the gradient average after an MPI sum). Per CPU path, as above.
double scale_and_sum_squares(float* v, std::size_t n, float scale);

}  // namespace lbt
