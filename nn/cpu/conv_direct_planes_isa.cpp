// The direct path's plane copies: images into padded (stride 1) or phase (stride 2) planes,
// output gradients into the weight gradient's layout, outputs back out; compiled once per ISA
// (cmake/isa_sources.cmake); see conv_direct.hpp.
#include <algorithm>
#include <stdexcept>

#include "core/vec16.hpp"
#include "nn/cpu/conv_direct.hpp"
#include "nn/cpu/short_rows.hpp"

namespace lbt::nn::conv_direct::LBT_ISA_NS {

using vec::v16;

namespace {

// One channel's six stride-2 planes (conv_direct.hpp): plane (a, v) row R is padded row
// 2R + a = image row 2R + a - 1 at image columns 2S + v - 1: the odd columns shifted right
// by one (v = 0: column 0 is the left padding), the even ones (v = 1), the odd ones (v = 2).
// Rows 16 and 32 wide split into even and odd lanes by shuffles; other widths column by column.
LBT_NO_LIBCALL_LOOPS void pad_phases_stride2(const float* src, const Geometry& g, float* dst) {
  const std::size_t plane = g.plane();
  const int row = g.row(), rows = g.h / 2 + 1;
  // Padded rows in order (image rows -1 to h), reading the image front to back: by parity
  // first, the jumps between rows left the hardware prefetcher behind.
  for (int padded = 0; padded < 2 * rows; ++padded) {
    const int a = padded % 2, R = padded / 2;
    float* out[3];
    for (int v = 0; v < 3; ++v)
      out[v] =
          dst + static_cast<std::size_t>(a * 3 + v) * plane + static_cast<std::size_t>(R) * row;
    const int i = padded - 1;
    if (i < 0 || i >= g.h) {
      for (float* o : out) zero_row(o, row);
      continue;
    }
    const float* line = src + static_cast<std::size_t>(i) * g.w;
#if defined(__AVX512F__)
    if (g.w == 16 || g.w == 32) {
      const v16 lo = vec::load(line), hi = g.w == 32 ? vec::load(line + 16) : lo;
      const v16 even = vec::even_of(lo, hi), odd = vec::odd_of(lo, hi);
      const v16 shifted = reinterpret_cast<v16>(_mm512_alignr_epi32(
          reinterpret_cast<__m512i>(odd), _mm512_setzero_si512(), 15));  // 0, odd[0..14]
      if (g.w == 32) {
        vec::store(out[0], shifted), vec::store(out[1], even), vec::store(out[2], odd);
      } else {  // 8 columns: the low halves
        _mm256_storeu_ps(out[0], _mm512_castps512_ps256(reinterpret_cast<__m512>(shifted)));
        _mm256_storeu_ps(out[1], _mm512_castps512_ps256(reinterpret_cast<__m512>(even)));
        _mm256_storeu_ps(out[2], _mm512_castps512_ps256(reinterpret_cast<__m512>(odd)));
      }
      continue;
    }
#endif
    for (int v = 0; v < 3; ++v) {
      for (int S = 0; S < row; ++S) {
        const int j = 2 * S + v - 1;
        out[v][S] = j >= 0 && j < g.w ? line[j] : 0.0f;
      }
    }
  }
  for (int p = 0; p < 6; ++p) {  // slack past the rows, which the last vectors read
    const std::size_t used = static_cast<std::size_t>(rows) * row;
    zero_row(dst + p * plane + used, static_cast<std::int64_t>(plane - used));
  }
}

// pad_planes for stride 1, with x read through `map` when it is not null.
LBT_NO_LIBCALL_LOOPS void pad_planes_stride1(const float* x, const Geometry& g, float* xp,
                                             const BatchNormGradMap* map) {
  const std::size_t plane = g.plane();
  const int p = g.pad(), row = g.row();
  for (int c = 0; c < g.channels; ++c) {
    float* dst = xp + static_cast<std::size_t>(c) * g.channel_stride();
    const std::size_t at = static_cast<std::size_t>(c) * g.h * g.w;
    zero_row(dst, static_cast<std::int64_t>(p) * row + p);  // top border, first left one
    for (int i = 0; i < g.h; ++i) {
      float* line = dst + static_cast<std::size_t>(i + p) * row + p;
      const std::size_t from = at + static_cast<std::size_t>(i) * g.w;
      if (map) {
        for (int j = 0; j < g.w; j += 16) {
          const int n = std::min(16, g.w - j);
          vec::store_first(line + j,
                           apply(*map, c, vec::load_first(x + from + j, n),
                                      vec::load_first(map->x + from + j, n)),
                           n);
        }
      } else {
        copy_row(line, x + from, g.w);
      }
      zero_row(line + g.w, 2 * p);  // right border, next row's left one
    }
    const std::size_t bottom = static_cast<std::size_t>(g.h + p) * row + p;
    zero_row(dst + bottom, static_cast<std::int64_t>(plane - bottom));  // bottom border, slack
  }
}

}  // namespace

LBT_NO_LIBCALL_LOOPS void pad_planes(const float* x, const Geometry& g, float* xp) {
  if (g.stride == 1) return pad_planes_stride1(x, g, xp, nullptr);
  for (int c = 0; c < g.channels; ++c)
    pad_phases_stride2(x + static_cast<std::size_t>(c) * g.h * g.w, g,
                       xp + static_cast<std::size_t>(c) * g.channel_stride());
}

LBT_NO_LIBCALL_LOOPS const float* prepare_dy(const float* dy, const Geometry& g, int out_channels,
                                             float* dst, const BatchNormGradMap* map) {
  if (map && g.stride != 1)
    throw std::logic_error("conv_direct::prepare_dy: a map only at stride 1");
  if (g.stride == 1) {
    pad_planes_stride1(dy, Geometry{out_channels, g.h, g.w, g.k, 1}, dst, map);
    return dst + static_cast<std::size_t>(g.pad()) * g.row() + g.pad();
  }
  const std::size_t stride = g.dy_stride();
  const int oh = g.out_h(), ow = g.out_w(), row = g.row();
  for (int o = 0; o < out_channels; ++o) {
    float* d = dst + static_cast<std::size_t>(o) * stride;
    zero_row(d, static_cast<std::int64_t>(stride));
    for (int i = 0; i < oh; ++i)
      copy_row(d + static_cast<std::size_t>(i) * row,
               dy + (static_cast<std::size_t>(o) * oh + i) * ow, ow);
  }
  return dst;
}

void unpad_planes(const float* yp, const Geometry& g, const float* bias, float* y, float* moments) {
  const std::size_t len = g.out_len();
  const int row = g.row(), oh = g.out_h(), ow = g.out_w();
  for (int c = 0; c < g.channels; ++c) {
    const float b = bias ? bias[c] : 0.0f;
    const float shift = yp[c * len] + b;
    v16 sum{}, sum_squares{};  // lanes: columns, over the rows (one reduction per plane)
    for (int i = 0; i < oh; ++i) {
      const float* src = yp + c * len + static_cast<std::size_t>(i) * row;
      float* dst = y + (static_cast<std::size_t>(c) * oh + i) * ow;
      if (moments) {
        for (int j = 0; j < ow; j += 16) {
          const int n = std::min(16, ow - j);
          const v16 v = vec::load_first(src + j, n) + b;
          vec::store_first(dst + j, v, n);
          const v16 d = vec::as_float(vec::as_int(v - shift) & (vec::kLaneIndex < n));
          sum += d;
          sum_squares = vec::fma(d, d, sum_squares);
        }
      } else {
#pragma omp simd
        for (int j = 0; j < ow; ++j) dst[j] = src[j] + b;
      }
    }
    if (moments) {
      float s1 = 0.0f, s2 = 0.0f;
      for (int l = 0; l < 16; ++l) s1 += sum[l], s2 += sum_squares[l];
      moments[c] = shift;
      moments[g.channels + c] = s1;
      moments[2 * g.channels + c] = s2;
    }
  }
}

}  // namespace lbt::nn::conv_direct::LBT_ISA_NS
