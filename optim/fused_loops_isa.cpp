// The fused optimizer loops, compiled once per ISA (cmake/isa_sources.cmake); see fused_loops.hpp.
// The coefficients are copied into locals and the arrays are restrict: otherwise a store through
// w may alias them and GCC reloads each coefficient every vector.
#include <array>
#include <cstddef>

#include "optim/update_rules.hpp"

namespace lbt::optim::loops::LBT_ISA_NS {
namespace {

// The norms sum in kLanes fixed lanes, added pairwise in a fixed order at the end (as
// core/sum_squares.hpp's lane_sum): the order is the same whatever the vector width, so every
// path gives the same bits, where `omp simd reduction` sums in as many lanes as a register
// holds. 16 doubles run as fast as that reduction on each path (2026-11-26, AVX-512 EPYC).
constexpr std::size_t kLanes = 16;

// Calls add(i, j) for each element i < n with its lane j. Local to this copy, as fold below: a
// template shared with other files would be one symbol the linker keeps from any ISA's copy.
template <class Add>
void over_lanes(std::size_t n, Add&& add) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::size_t j = 0; j < kLanes; ++j) add(i + j, j);
  }
  for (std::size_t j = 0; i < n; ++i, ++j) add(i, j);
}

double fold(double (&lanes)[kLanes]) {
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)
    for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

}  // namespace

void sgd_plain(float* __restrict w, const float* __restrict g, std::size_t n, float scale, float l2,
               float lr) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    rules::sgd_plain(w[i], rules::transformed_grad(g[i], w[i], scale, l2), lr);
}

void sgd_momentum(float* __restrict w, float* __restrict buf, const float* __restrict g,
                  std::size_t n, float scale, float l2,
                  const rules::SgdCoefficients& coefficients) {
  const rules::SgdCoefficients k = coefficients;
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    rules::sgd_momentum(w[i], buf[i], rules::transformed_grad(g[i], w[i], scale, l2), k);
}

void adam(float* __restrict w, float* __restrict m, float* __restrict v, const float* __restrict g,
          std::size_t n, float scale, float l2, float wd, float lr,
          const rules::AdamCoefficients& coefficients) {
  const rules::AdamCoefficients k = coefficients;
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    rules::adam(w[i], m[i], v[i], rules::transformed_grad(g[i], w[i], scale, l2), wd, lr, k);
}

std::array<double, 3> weight_and_grad_norms(const float* __restrict w, const float* __restrict g,
                                            std::size_t n, double beta) {
  double ww[kLanes] = {}, gg[kLanes] = {}, uu[kLanes] = {};
  over_lanes(n, [&](std::size_t i, std::size_t j) {
    const double wi = w[i], gi = g[i], ui = gi + beta * wi;
    ww[j] += rules::square(wi);
    gg[j] += rules::square(gi);
    uu[j] += rules::square(ui);
  });
  return {fold(ww), fold(gg), fold(uu)};
}

void lars_plain(float* __restrict w, const float* __restrict g, std::size_t n, float beta, float a,
                float c) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) rules::lars_plain(w[i], g[i], beta, a, c);
}

void lars_momentum(float* __restrict w, float* __restrict v, const float* __restrict g,
                   std::size_t n, float beta, float a, float c, float one_minus_mu) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    rules::lars_momentum(w[i], v[i], g[i], beta, a, c, one_minus_mu);
}

std::array<double, 2> lamb_moments_and_norms(const float* __restrict w, float* __restrict m,
                                             float* __restrict v, const float* __restrict g,
                                             std::size_t n, float lambda,
                                             const rules::AdamCoefficients& coefficients) {
  const rules::AdamCoefficients k = coefficients;
  double ww[kLanes] = {}, uu[kLanes] = {};
  over_lanes(n, [&](std::size_t i, std::size_t j) {
    rules::adam_moments(m[i], v[i], g[i], k);
    ww[j] += rules::square(w[i]);
    uu[j] += rules::square(rules::adam_direction(m[i], v[i], w[i], lambda, k));
  });
  return {fold(ww), fold(uu)};
}

void lamb_update(float* __restrict w, const float* __restrict m, const float* __restrict v,
                 std::size_t n, float lambda, float size,
                 const rules::AdamCoefficients& coefficients) {
  const rules::AdamCoefficients k = coefficients;
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    w[i] -= size * rules::adam_direction(m[i], v[i], w[i], lambda, k);
}

}  // namespace lbt::optim::loops::LBT_ISA_NS
