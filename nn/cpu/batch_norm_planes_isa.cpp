// BatchNorm's per-plane loops, compiled once per ISA (cmake/isa_sources.cmake); see
// batch_norm_planes.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/vec16.hpp"

namespace lbt::nn::bn_planes::LBT_ISA_NS {

using namespace vec;

// Two independent vector chains per sum (a single one waits on the add latency at every
// vector). Lanes past the plane's end add nothing.
void shifted_sums(const float* p, std::int64_t n, float shift, float* lanes) {
  v16 s1[2] = {}, s2[2] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 2; ++k) {
      const v16 d = load(p + i + 16 * k) - shift;
      s1[k] += d;
      s2[k] = fma(d, d, s2[k]);
    }
  }
  for (; i < n; i += 16) {
    const int len = static_cast<int>(std::min<std::int64_t>(16, n - i));
    const v16 d = as_float(as_int(load_first(p + i, len) - shift) & (kLaneIndex < len));
    s1[0] += d;
    s2[0] = fma(d, d, s2[0]);
  }
  store(lanes, s1[0] + s1[1]);
  store(lanes + 16, s2[0] + s2[1]);
}

namespace {

// Explicit vectors: GCC's `omp simd reduction` kept the masked loop's accumulators on the
// stack (70% slower).
template <bool Relu>
void grad_sums_of(const float* p, const float* g, std::int64_t n, float mean, float scale,
                  float shift, float* lanes) {
  v16 s1[2] = {}, s2[2] = {};
  auto add = [&](v16 x, v16 d, int k) {
    if constexpr (Relu) d = as_float(as_int(d) & (fma(x, v16{} + scale, v16{} + shift) > 0.0f));
    s1[k] += d;
    s2[k] += d * (x - mean);
  };
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    add(load(p + i), load(g + i), 0);
    add(load(p + i + 16), load(g + i + 16), 1);
  }
  for (; i < n; i += 16) {  // zeros past the end add nothing: d = 0 there
    const int len = static_cast<int>(std::min<std::int64_t>(16, n - i));
    add(load_first(p + i, len), load_first(g + i, len), 0);
  }
  store(lanes, s1[0] + s1[1]);
  store(lanes + 16, s2[0] + s2[1]);
}

}  // namespace

void grad_sums(const float* p, const float* dy, std::int64_t n, float mean, float scale,
               float shift, bool relu, float* lanes) {
  if (relu)
    grad_sums_of<true>(p, dy, n, mean, scale, shift, lanes);
  else
    grad_sums_of<false>(p, dy, n, mean, scale, shift, lanes);
}

// std::fma, so that the backward's mask (relu) recomputes these bits exactly; std::max keeps
// a NaN (the divergence check downstream must see it). An absent residual map is the identity:
// fma(r, 1, -0) is r, -0 included.
void affine(const float* p, float scale, float shift, const float* r, float r_scale, float r_shift,
            bool relu, std::int64_t n, float* q) {
  if (r && relu) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
      q[i] = std::max(std::fma(p[i], scale, shift) + std::fma(r[i], r_scale, r_shift), 0.0f);
  } else if (r) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
      q[i] = std::fma(p[i], scale, shift) + std::fma(r[i], r_scale, r_shift);
  } else if (relu) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) q[i] = std::max(std::fma(p[i], scale, shift), 0.0f);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) q[i] = std::fma(p[i], scale, shift);
  }
}

void mask_by_positive(const float* out, const float* dy, std::int64_t n, float* m) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) m[i] = out[i] > 0.0f ? dy[i] : 0.0f;
}

// The fused multiply-add is explicit, as in channels_last.hpp's apply(), which must give the
// same bits.
void input_grad(const float* p, const float* g, std::int64_t n, float k, float a, float b,
                float mean, bool relu, float scale, float shift, float* d) {
  if (relu) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const float gi = std::fma(p[i], scale, shift) > 0.0f ? g[i] : 0.0f;
      d[i] = k * std::fma(mean - p[i], b, gi - a);
    }
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) d[i] = k * std::fma(mean - p[i], b, g[i] - a);
  }
}

}  // namespace lbt::nn::bn_planes::LBT_ISA_NS
