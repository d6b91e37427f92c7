// NCHW <-> channels-last copies; see channels_last.hpp.
#include "trainer/nn/channels_last.hpp"

#include <algorithm>
#include <utility>

#include "core/vec16.hpp"
#include "trainer/nn/short_rows.hpp"

namespace lbt::nn {
namespace {

using vec::load;
using vec::load_first;
using vec::store;
using vec::v16;
using vec::v16i;

// r[k][l] <- r[l][k] for a 16 x 16 block: four stages that swap the off-diagonal D x D blocks
// of every 2D x 2D block (D = 8, 4, 2, 1), one two-source permute per row and stage.
template <int D, std::size_t... I>
constexpr v16i swap_low(std::index_sequence<I...>) {  // row i: columns with bit D from row i + D
  return v16i{((I & D) ? static_cast<int>(16 + I - D) : static_cast<int>(I))...};
}
template <int D, std::size_t... I>
constexpr v16i swap_high(std::index_sequence<I...>) {  // row i + D: the others from row i
  return v16i{((I & D) ? static_cast<int>(16 + I) : static_cast<int>(I + D))...};
}
template <int D>
inline void transpose_stage(v16* r) {
  constexpr v16i low = swap_low<D>(std::make_index_sequence<16>{});
  constexpr v16i high = swap_high<D>(std::make_index_sequence<16>{});
  for (int i = 0; i < 16; ++i) {
    if (i & D) continue;
    const v16 a = r[i], b = r[i + D];
    r[i] = __builtin_shuffle(a, b, low);
    r[i + D] = __builtin_shuffle(a, b, high);
  }
}
inline void transpose16(v16* r) {
  transpose_stage<8>(r);
  transpose_stage<4>(r);
  transpose_stage<2>(r);
  transpose_stage<1>(r);
}

}  // namespace

LBT_NO_LIBCALL_LOOPS void to_channels_last(const float* x, int C, int h, int w, int p, int hp,
                                           int wp, std::int64_t count, float* dst) {
  const int hw = h * w;
  const std::size_t image = static_cast<std::size_t>(hp) * wp * C;
  for (std::int64_t n = 0; n < count; ++n) {
    float* d = dst + static_cast<std::size_t>(n) * image;
    const float* src = x + static_cast<std::size_t>(n) * C * hw;
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
        for (int l = 0; l < 16; ++l)
          r[l] = load_first(src + static_cast<std::size_t>(c0 + l) * hw + q0, len);
        transpose16(r);
        for (int k = 0; k < len; ++k) {
          store(d + (static_cast<std::size_t>(i + p) * wp + j + p) * C + c0, r[k]);
          if (++j == w) j = 0, ++i;
        }
      }
    }
  }
}

LBT_NO_LIBCALL_LOOPS void from_channels_last(const float* src, int C, int hw, const float* bias,
                                             std::int64_t count, float* y) {
  for (std::int64_t n = 0; n < count; ++n) {
    const float* s = src + static_cast<std::size_t>(n) * hw * C;
    float* d = y + static_cast<std::size_t>(n) * hw * C;
    for (int c0 = 0; c0 < C; c0 += 16) {
      for (int q0 = 0; q0 < hw; q0 += 16) {
        const int len = std::min(16, hw - q0);
        v16 r[16];
        for (int k = 0; k < 16; ++k)
          r[k] = k < len ? load(s + static_cast<std::size_t>(q0 + k) * C + c0) : v16{};
        transpose16(r);
        for (int l = 0; l < 16; ++l) {
          const v16 v = bias ? r[l] + bias[c0 + l] : r[l];
          vec::store_first(d + static_cast<std::size_t>(c0 + l) * hw + q0, v, len);
        }
      }
    }
  }
}

}  // namespace lbt::nn
