// The bodies of nn/cuda's BatchNorm and pooling kernels (batch_norm.cu): which values a block
// sums, each element's index and terms, each channel's map and coefficients, each output's
// window, written as functions both compilers build (LBT_HOST_DEVICE). The kernels call them for
// the indices a grid gives; tests/nn/test_gpu_kernel_bodies.cpp calls them for every index on
// the CPU and compares with the CPU's own layers, so the GPU's index arithmetic and formulas are
// tested on every machine, with or without a GPU. Left to a GPU: the launches, and the order of
// the in-block tree sums (double sums of float terms).
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "nn/batch_norm_math.hpp"

namespace lbt::nn::cuda::body {

// ---- BatchNorm over [batch, C, HW] ----

// Blocks per channel for a batch: about 512 blocks in all (enough to fill a GPU), never a slice
// finer than one image; a fixed function of the batch, so the sums' order is too.
LBT_HOST_DEVICE inline std::int64_t bn_blocks_per_channel(std::int64_t batch, std::int64_t C) {
  const std::int64_t wanted = 512 / C > 1 ? 512 / C : 1;
  const std::int64_t blocks = batch < wanted ? batch : wanted;
  return blocks > 1 ? blocks : 1;
}

// Block p of P takes images [first, last): ceil(batch / P) each, the last blocks short or empty.
struct Slice {
  std::int64_t first, last;
  LBT_HOST_DEVICE std::int64_t images() const { return last > first ? last - first : 0; }
};
LBT_HOST_DEVICE inline Slice bn_slice(std::int64_t p, std::int64_t P, std::int64_t batch) {
  const std::int64_t per = (batch + P - 1) / P, first = p * per;
  return {first, first + per < batch ? first + per : batch};
}

// The index in [batch, C, HW] of the i-th value of channel c within the slice's images.
LBT_HOST_DEVICE inline std::int64_t bn_element(const Slice& s, std::int64_t i, std::int64_t c,
                                               std::int64_t C, std::int64_t HW) {
  return ((s.first + i / HW) * C + c) * HW + i % HW;
}

LBT_HOST_DEVICE inline std::int64_t channel_of(std::int64_t i, std::int64_t C, std::int64_t HW) {
  return i / HW % C;
}

// The forward's terms of element e of channel c: d = x - k and d^2, k = x[c, first plane value
// of image 0] (the CPU's shifted-data sums).
LBT_HOST_DEVICE inline void bn_forward_terms(const float* x, std::int64_t e, std::int64_t c,
                                             std::int64_t HW, double& s1, double& s2) {
  const float d = x[e] - x[c * HW];
  s1 += d;
  s2 += static_cast<double>(d) * d;
}

// The backward's terms: dy and dy (x - mean).
LBT_HOST_DEVICE inline void bn_backward_terms(const float* x, const float* dy, std::int64_t e,
                                              float mean, double& s1, double& s2) {
  s1 += dy[e];
  s2 += static_cast<double>(dy[e]) * (x[e] - mean);
}

// Channel c's two sums: its P blocks' partials ([C][P][2]) added in block order.
LBT_HOST_DEVICE inline void bn_add_partials(const double* partials, std::int64_t c, std::int64_t P,
                                            double& s1, double& s2) {
  s1 = 0.0, s2 = 0.0;
  for (std::int64_t p = 0; p < P; ++p) {
    s1 += partials[(c * P + p) * 2];
    s2 += partials[(c * P + p) * 2 + 1];
  }
}

// A convolution's bias gradient (channel_sums, batch_norm.cu) through the same blocks: its term
// is the value itself; the channel's total is its partials' first sums in block order, rounded
// to float, written or (micro-batches) added to out[c].
LBT_HOST_DEVICE inline void value_term(const float* x, std::int64_t e, double& s1) {
  s1 += x[e];
}
LBT_HOST_DEVICE inline void store_channel_total(const double* partials, std::int64_t c,
                                                std::int64_t P, bool accumulate, float* out) {
  double total = 0.0, unused = 0.0;
  bn_add_partials(partials, c, P, total, unused);
  out[c] = accumulate ? out[c] + static_cast<float>(total) : static_cast<float>(total);
}

// The per-channel records on the device: bn::ChannelMap as 4 floats, bn::GradCoefficients as 3.
constexpr int kMapFloats = 4, kGradFloats = 3;
LBT_HOST_DEVICE inline void store_map(float* maps, std::int64_t c, const bn::ChannelMap& m) {
  float* out = maps + c * kMapFloats;
  out[0] = m.mean, out[1] = m.inv_std, out[2] = m.scale, out[3] = m.shift;
}
LBT_HOST_DEVICE inline bn::ChannelMap load_map(const float* maps, std::int64_t c) {
  const float* m = maps + c * kMapFloats;
  return {m[0], m[1], m[2], m[3]};
}
LBT_HOST_DEVICE inline void store_grad(float* grads, std::int64_t c,
                                       const bn::GradCoefficients& g) {
  float* out = grads + c * kGradFloats;
  out[0] = g.k, out[1] = g.a, out[2] = g.b;
}
LBT_HOST_DEVICE inline bn::GradCoefficients load_grad(const float* grads, std::int64_t c) {
  const float* g = grads + c * kGradFloats;
  return {g[0], g[1], g[2]};
}

// Element i's output y = fma(x, scale, shift) and input gradient, by its channel's records.
LBT_HOST_DEVICE inline float bn_output(const float* x, const float* maps, std::int64_t i,
                                       std::int64_t C, std::int64_t HW) {
  const bn::ChannelMap m = load_map(maps, channel_of(i, C, HW));
  return fmaf(x[i], m.scale, m.shift);
}
LBT_HOST_DEVICE inline float bn_input_grad(const float* x, const float* dy, const float* maps,
                                           const float* grads, std::int64_t i, std::int64_t C,
                                           std::int64_t HW) {
  const std::int64_t c = channel_of(i, C, HW);
  return bn::input_grad(x[i], dy[i], load_grad(grads, c), load_map(maps, c).mean);
}

// ---- residual sums and pools ----

// max(a + b, 0) as std::max(v, 0.0f) reads it: a NaN stays a NaN.
LBT_HOST_DEVICE inline float relu_of_sum(float a, float b) {
  const float v = a + b;
  return v < 0.0f ? 0.0f : v;
}

// Plane p's mean over its `plane` values, summed in order.
LBT_HOST_DEVICE inline float plane_mean(const float* x, std::int64_t p, std::int64_t plane,
                                        float scale) {
  float s = 0.0f;
  for (std::int64_t i = 0; i < plane; ++i) s += x[p * plane + i];
  return s * scale;
}

// Output i of [planes, ho, wo] of k x k windows side by side over [planes, h, w]: the window's
// sum (rows, then columns, as the CPU's AvgPool2d) times 1 / k^2.
LBT_HOST_DEVICE inline float avg_pool_output(const float* x, std::int64_t i, std::int64_t h,
                                             std::int64_t w, std::int64_t k, std::int64_t ho,
                                             std::int64_t wo, float scale) {
  const std::int64_t p = i / (ho * wo), r = i / wo % ho, c = i % wo;
  const float* window = x + (p * h + r * k) * w + c * k;
  float s = 0.0f;
  for (std::int64_t a = 0; a < k; ++a)
    for (std::int64_t b = 0; b < k; ++b) s += window[a * w + b];
  return s * scale;
}

// Input i of [planes, h, w]: its window's gradient times 1 / k^2, or 0 past the last window.
LBT_HOST_DEVICE inline float avg_pool_input_grad(const float* dy, std::int64_t i, std::int64_t h,
                                                 std::int64_t w, std::int64_t k, std::int64_t ho,
                                                 std::int64_t wo, float scale) {
  const std::int64_t p = i / (h * w), r = i / w % h / k, c = i % w / k;
  return r < ho && c < wo ? dy[(p * ho + r) * wo + c] * scale : 0.0f;
}

}  // namespace lbt::nn::cuda::body
