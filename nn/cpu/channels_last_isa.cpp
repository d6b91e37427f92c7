// NCHW <-> channels-last copies, compiled once per ISA (cmake/isa_sources.cmake); see
// channels_last.hpp.
#include "nn/cpu/channels_last.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/vec16.hpp"
#include "nn/cpu/short_rows.hpp"

namespace lbt::nn::LBT_ISA_NS {
using vec::load;
using vec::load_first;
using vec::store;
using vec::transpose16;
using vec::v16;

void apply_batch_norm_grad(const BatchNormGradMap& map, const float* g, int C, int hw, float* out) {
  for (int c = 0; c < C; ++c) {
    const std::size_t at = static_cast<std::size_t>(c) * hw;
    for (int q = 0; q < hw; q += 16) {
      const int len = std::min(16, hw - q);
      vec::store_first(out + at + q,
                       apply(map, c, load_first(g + at + q, len), load_first(map.x + at + q, len)),
                       len);
    }
  }
}

namespace {

enum class Map { kNone, kAffine, kBatchNormGrad };

// to_channels_last with the map chosen at compile time, so that no variant's block loop tests
// for another's map.
template <Map kMap>
LBT_NO_LIBCALL_LOOPS void copy_to_channels_last(const float* x, int C, int h, int w, int p, int hp,
                                                int wp, std::int64_t count, float* dst,
                                                const ChannelAffine* affine,
                                                const BatchNormGradMap* grad) {
  const int hw = h * w;
  const std::size_t image = static_cast<std::size_t>(hp) * wp * C;
  for (std::int64_t n = 0; n < count; ++n) {
    float* d = dst + static_cast<std::size_t>(n) * image;
    const float* src = x + static_cast<std::size_t>(n) * C * hw;
    if constexpr (kMap == Map::kBatchNormGrad) {
      // The image's dx first, plane by plane into L2 (two sequential reads), then transposed
      // from there: computed on the 32 rows of a block read straight from both arrays (16
      // lines 4 KiB apart in each), the copy took 6.5% of a batch-128 step against 4.3%.
      thread_local std::vector<float> mapped;
      mapped.resize(static_cast<std::size_t>(C) * hw);
      LBT_ISA_NS::apply_batch_norm_grad(grad->advanced(n * C * hw), src, C, hw, mapped.data());
      src = mapped.data();
    }
    zero_row(d, static_cast<std::int64_t>(p) * wp * C);  // top border
    zero_row(d + static_cast<std::size_t>(h + p) * wp * C,
             static_cast<std::int64_t>(hp - h - p) * wp * C);  // bottom border
    for (int i = 0; i < h; ++i) {
      float* line = d + static_cast<std::size_t>(i + p) * wp * C;
      zero_row(line, static_cast<std::int64_t>(p) * C);
      zero_row(line + static_cast<std::size_t>(w + p) * C,
               static_cast<std::int64_t>(wp - w - p) * C);
    }
    for (int c0 = 0; c0 < C; c0 += 16) {
      int i = 0, j = 0;  // pixel q0 + k's row and column
      for (int q0 = 0; q0 < hw; q0 += 16) {
        const int len = std::min(16, hw - q0);
        v16 r[16];
#pragma GCC unroll 16
        for (int l = 0; l < 16; ++l) {
          const std::size_t at = static_cast<std::size_t>(c0 + l) * hw + q0;
          r[l] = load_first(src + at, len);
        }
        transpose16(r);
        // Lanes past len are not stored, whatever the map makes of their zeros.
        if constexpr (kMap == Map::kAffine) {
          const v16 scale = load(affine->scale + c0), shift = load(affine->shift + c0);
          for (int k = 0; k < 16; ++k) {
            r[k] = vec::fma(r[k], scale, shift);
            // max(v, 0) that keeps a NaN, as std::max(v, 0.0f) in BatchNorm's own pass.
            if (affine->relu) r[k] = vec::as_float(vec::as_int(r[k]) & ~(r[k] < 0.0f));
          }
        }
        for (int k = 0; k < len; ++k) {
          store(d + (static_cast<std::size_t>(i + p) * wp + j + p) * C + c0, r[k]);
          if (++j == w) j = 0, ++i;
        }
      }
    }
  }
}

}  // namespace

void to_channels_last(const float* x, int C, int h, int w, int p, int hp, int wp,
                      std::int64_t count, float* dst, const ChannelAffine* affine,
                      const BatchNormGradMap* grad) {
  if (grad)
    copy_to_channels_last<Map::kBatchNormGrad>(x, C, h, w, p, hp, wp, count, dst, affine, grad);
  else if (affine)
    copy_to_channels_last<Map::kAffine>(x, C, h, w, p, hp, wp, count, dst, affine, grad);
  else
    copy_to_channels_last<Map::kNone>(x, C, h, w, p, hp, wp, count, dst, affine, grad);
}

namespace {

// from_channels_last, with the moments (channels_last.hpp) when kMoments.
template <bool kMoments>
LBT_NO_LIBCALL_LOOPS void copy_from_channels_last(const float* src, int C, int hw,
                                                  const float* bias, std::int64_t count, float* y,
                                                  const float* addend, float* moments) {
  for (std::int64_t n = 0; n < count; ++n) {
    const float* s = src + static_cast<std::size_t>(n) * hw * C;
    float* d = y + static_cast<std::size_t>(n) * hw * C;
    for (int c0 = 0; c0 < C; c0 += 16) {
      v16 shift{}, sum{}, sum_squares{};  // over the 16 channels' planes, lane = channel
      for (int q0 = 0; q0 < hw; q0 += 16) {
        const int len = std::min(16, hw - q0);
        v16 r[16];
        for (int k = 0; k < 16; ++k)
          r[k] = k < len ? load(s + static_cast<std::size_t>(q0 + k) * C + c0) : v16{};
        if constexpr (kMoments) {  // pixels in pairs: two chains of 8 additions per block
          if (q0 == 0) shift = r[0];
          v16 s1[2] = {}, s2[2] = {};
#pragma GCC unroll 16
          for (int k = 0; k < 16; ++k) {
            const v16 dev = k < len ? r[k] - shift : v16{};
            s1[k % 2] += dev;
            s2[k % 2] = vec::fma(dev, dev, s2[k % 2]);
          }
          sum += s1[0] + s1[1];
          sum_squares += s2[0] + s2[1];
        }
        transpose16(r);
        for (int l = 0; l < 16; ++l) {
          v16 v = bias ? r[l] + bias[c0 + l] : r[l];
          const std::size_t at = static_cast<std::size_t>(c0 + l) * hw + q0;
          if (addend) v += load_first(addend + static_cast<std::size_t>(n) * hw * C + at, len);
          vec::store_first(d + at, v, len);
        }
      }
      if constexpr (kMoments) {
        float* m = moments + static_cast<std::size_t>(n) * 3 * C + c0;
        store(m, shift), store(m + C, sum), store(m + 2 * C, sum_squares);
      }
    }
  }
}

}  // namespace

void from_channels_last(const float* src, int C, int hw, const float* bias, std::int64_t count,
                        float* y, const float* addend, float* moments) {
  if (moments) {
    if (bias || addend)
      throw std::logic_error("from_channels_last: moments only of the copied values themselves");
    copy_from_channels_last<true>(src, C, hw, bias, count, y, addend, moments);
  } else {
    copy_from_channels_last<false>(src, C, hw, bias, count, y, addend, moments);
  }
}

}  // namespace lbt::nn::LBT_ISA_NS
