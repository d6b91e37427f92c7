// Images between NCHW (the layers' layout) and channels-last (height, width, channel: 16
// channels of a pixel in one vector, as the Winograd transforms read them), 16 channels x 16
// pixels at a time through a register transpose. C must be a multiple of 16.
#pragma once
#include <cstdint>

#include "core/vec16.hpp"

namespace lbt::nn {

// A per-channel map applied to the values on their way in: max(fma(v, scale[c], shift[c]), 0)
// with relu, fma(...) without (a BatchNorm, and the ReLU after it, that is never written out).
struct ChannelAffine {
  const float* scale = nullptr;
  const float* shift = nullptr;
  bool relu = false;
};

// A BatchNorm's input gradient computed from its output gradient g as the values are read
// (BatchNorm::backward's last pass, which then writes nothing): per channel c,
// dx = k[c] (g' - a[c] - (x - mean[c]) b[c]), x the BatchNorm's input (NCHW, g's layout) and
// g' = g, or with relu g where fma(x, scale[c], shift[c]) > 0 (the forward's ReLU passed).
struct BatchNormGradMap {
  const float* x = nullptr;
  const float *k = nullptr, *a = nullptr, *b = nullptr, *mean = nullptr;
  const float *scale = nullptr, *shift = nullptr;
  bool relu = false;

  // The same map for the values `floats` further on (a later image of the batch).
  BatchNormGradMap advanced(std::int64_t floats) const {
    BatchNormGradMap m = *this;
    m.x += floats;
    return m;
  }
};

LBT_VEC_BEGIN  // compiled per ISA (core/vec16.hpp)
// dx for 16 values g of channel c at inputs x, as BatchNorm's own pass computes it
// (bn_planes::input_grad: the same operations, so the same bits). The fused multiply-add is
// explicit in both: g++ contracts a * b + c into one wherever its optimizer sees fit
// (-ffp-contract=fast is its C++ default), which differed between the two at -O2 with AVX2.
inline vec::v16 apply(const BatchNormGradMap& m, int c, vec::v16 g, vec::v16 x) {
  if (m.relu)
    g = vec::as_float(vec::as_int(g) &
                      (vec::fma(x, vec::v16{} + m.scale[c], vec::v16{} + m.shift[c]) > 0.0f));
  return m.k[c] * vec::fma(m.mean[c] - x, vec::v16{} + m.b[c], g - m.a[c]);
}
LBT_VEC_END

// out[c][q] = apply(map, c, g[c][q], map.x[c][q]) for one image of C planes of hw values: the
// BatchNorm's input gradient written to a scratch image (in cache) instead of to memory.
void apply_batch_norm_grad(const BatchNormGradMap& map, const float* g, int C, int hw, float* out);

// dst[n][(i + p) * wp + j + p][c] = x[n][c][i][j] (through `affine` or `grad` when one is not
// null; grad's x starts at image 0 of this call too) for `count` images, inside zero borders:
// p rows and columns before the image, hp - h - p rows and wp - w - p columns after it (zeros:
// the maps do not apply to the padding).
void to_channels_last(const float* x, int C, int h, int w, int p, int hp, int wp,
                      std::int64_t count, float* dst, const ChannelAffine* affine = nullptr,
                      const BatchNormGradMap* grad = nullptr);

// y[n][c][q] = src[n][q][c] (+ bias[c] when bias is not null) (+ addend[n][c][q] when addend
// is not null; it may be y itself) for q < hw: back to NCHW.
// moments (may be null; then bias and addend must be): per image n and channel c, the plane's
// first value k and the sums of y - k and (y - k)^2 over the plane, at moments[n][0][c],
// moments[n][1][c] and moments[n][2][c], summed as the values pass through registers: what a
// BatchNorm after the layer needs of its input (BatchNorm::forward_fused's x_moments).
void from_channels_last(const float* src, int C, int hw, const float* bias, std::int64_t count,
                        float* y, const float* addend = nullptr, float* moments = nullptr);

}  // namespace lbt::nn
