// Winograd F(4x4, 3x3) and F(2x2, 5x5) convolution; see winograd.hpp.
#include "trainer/nn/winograd.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/panel_gemm.hpp"
#include "core/vec16.hpp"
#include "trainer/nn/short_rows.hpp"

namespace lbt::nn::winograd {
namespace {

using vec::load;
using vec::load_first;
using vec::store;
using vec::v16;
using vec::v16i;

// The filter transform G (6 x r) for the points 0, 1, -1, 2, -2 and infinity: row j holds
// p_j^k / f_j with f_j = prod over the other finite points l of (p_j - p_l); the row of the
// point at infinity picks the filter's last tap (Lavin & Gray 2016, section 4; Toom-Cook).
struct FilterTransform {
  float g[kAlpha][5] = {};
  explicit FilterTransform(int r) {
    constexpr double points[5] = {0, 1, -1, 2, -2};
    for (int j = 0; j < 5; ++j) {
      double f = 1.0, power = 1.0;
      for (int l = 0; l < 5; ++l)
        if (l != j) f *= points[j] - points[l];
      for (int k = 0; k < r; ++k, power *= points[j]) g[j][k] = static_cast<float>(power / f);
    }
    g[5][r - 1] = 1.0f;
  }
};

const FilterTransform& filter_transform(int r) {
  static const FilterTransform g3(3), g5(5);
  return r == 3 ? g3 : g5;
}

// The data transform: out = B^T d for one column of 6 (the same for both r).
inline void data_transform(const v16* d, v16* out) {
  out[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  out[1] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
  out[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
  out[3] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
  out[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
  out[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// The output transform: y = A^T m for one column of 6 (M = 4 or 2 outputs).
template <int M>
inline void output_transform(const v16* m, v16* y) {
  const v16 a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
  y[0] = m[0] + a + c;
  if constexpr (M == 4) {
    y[1] = b + 2.0f * d;
    y[2] = a + 4.0f * c;
    y[3] = b + 8.0f * d + m[5];
  } else {
    y[1] = b + 2.0f * d + m[5];
  }
}

// Its transpose, for the weight gradient: e = A d for one column of M output gradients.
template <int M>
inline void output_transform_transposed(const v16* d, v16* e) {
  if constexpr (M == 4) {
    const v16 even = d[0] + d[2], odd = d[1] + d[3];
    const v16 even4 = d[0] + 4.0f * d[2], odd4 = 2.0f * d[1] + 8.0f * d[3];
    e[0] = d[0];
    e[1] = even + odd;
    e[2] = even - odd;
    e[3] = even4 + odd4;
    e[4] = even4 - odd4;
    e[5] = d[3];
  } else {
    e[0] = d[0];
    e[1] = d[0] + d[1];
    e[2] = d[0] - d[1];
    e[3] = d[0] + 2.0f * d[1];
    e[4] = d[0] - 2.0f * d[1];
    e[5] = d[1];
  }
}

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

// dst[n][(i + p) * wp + j + p][c] = x[n][c][i][j] with zero borders: images channels-last,
// 16 channels x 16 pixels at a time through a register transpose.
LBT_NO_LIBCALL_LOOPS void to_channels_last(const float* x, int C, int h, int w, int p,
                                           std::int64_t count, float* dst) {
  const int wp = w + 2 * p, hw = h * w;
  const std::size_t image = static_cast<std::size_t>(h + 2 * p) * wp * C;
  for (std::int64_t n = 0; n < count; ++n) {
    float* d = dst + static_cast<std::size_t>(n) * image;
    const float* src = x + static_cast<std::size_t>(n) * C * hw;
    zero_row(d, static_cast<std::int64_t>(p) * wp * C);
    zero_row(d + static_cast<std::size_t>(h + p) * wp * C, static_cast<std::int64_t>(p) * wp * C);
    for (int i = 0; i < h; ++i) {
      float* line = d + static_cast<std::size_t>(i + p) * wp * C;
      zero_row(line, static_cast<std::int64_t>(p) * C);
      zero_row(line + static_cast<std::size_t>(w + p) * C, static_cast<std::int64_t>(p) * C);
    }
    for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
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

// y[n][c][q] = src[n][q][c] (+ bias[c]), q < h * w: back to NCHW, through the same transpose.
LBT_NO_LIBCALL_LOOPS void from_channels_last(const float* src, int C, int hw, const float* bias,
                                             std::int64_t count, float* y) {
  for (std::int64_t n = 0; n < count; ++n) {
    const float* s = src + static_cast<std::size_t>(n) * hw * C;
    float* d = y + static_cast<std::size_t>(n) * hw * C;
    for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
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

// Geometry of one call's tiles: `count` images of th x tw tiles of side m, on padded
// channels-last images wp pixels wide.
struct Tiles {
  int m, th, tw, wp, hp;
  std::int64_t count;
  std::size_t total() const { return static_cast<std::size_t>(count) * th * tw; }
  // Floats from one transformed position's [tile][channel] matrix to the next: one cache line
  // more than its size, so that the 36 rows a transform reads or writes do not all fall in the
  // same L1 set when the size is a power of two (ResNet's layers: 16 KiB to 64 KiB).
  std::size_t plane(int C) const { return total() * C + kChannelBlock; }
};

// v[xi][t][c] = (B^T d_t B)[xi] for every 6x6 tile d_t of the padded channels-last images.
void transform_input(const float* padded, int C, const Tiles& g, float* v) {
  const std::size_t plane = g.plane(C), image = static_cast<std::size_t>(g.hp) * g.wp * C;
  std::size_t t = 0;
  for (std::int64_t n = 0; n < g.count; ++n) {
    for (int ti = 0; ti < g.th; ++ti) {
      for (int tj = 0; tj < g.tw; ++tj, ++t) {
        const float* base = padded + static_cast<std::size_t>(n) * image +
                            (static_cast<std::size_t>(g.m * ti) * g.wp + g.m * tj) * C;
        for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
          v16 rows[kAlpha][kAlpha];
          for (int u = 0; u < kAlpha; ++u) {
            v16 d[kAlpha];
            for (int x = 0; x < kAlpha; ++x)
              d[x] = load(base + (static_cast<std::size_t>(u) * g.wp + x) * C + c0);
            data_transform(d, rows[u]);
          }
          for (int nu = 0; nu < kAlpha; ++nu) {
            v16 col[kAlpha], out[kAlpha];
            for (int u = 0; u < kAlpha; ++u) col[u] = rows[u][nu];
            data_transform(col, out);
            for (int xi = 0; xi < kAlpha; ++xi)
              store(v + (xi * kAlpha + nu) * plane + t * C + c0, out[xi]);
          }
        }
      }
    }
  }
}

// out[n][(m ti + i) * w + m tj + j][o] = (A^T m_t A)[i][j]: the tiles' outputs, channels-last.
template <int M>
void transform_output(const float* prod, int C, const Tiles& g, float* out) {
  const std::size_t plane = g.plane(C);
  const int w = g.tw * M;
  const std::size_t image = static_cast<std::size_t>(g.th) * M * w * C;
  std::size_t t = 0;
  for (std::int64_t n = 0; n < g.count; ++n) {
    for (int ti = 0; ti < g.th; ++ti) {
      for (int tj = 0; tj < g.tw; ++tj, ++t) {
        float* base = out + static_cast<std::size_t>(n) * image +
                      (static_cast<std::size_t>(M * ti) * w + M * tj) * C;
        for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
          v16 rows[kAlpha][M];
          for (int xi = 0; xi < kAlpha; ++xi) {
            v16 mm[kAlpha];
            for (int nu = 0; nu < kAlpha; ++nu)
              mm[nu] = load(prod + (xi * kAlpha + nu) * plane + t * C + c0);
            output_transform<M>(mm, rows[xi]);
          }
          for (int j = 0; j < M; ++j) {
            v16 col[kAlpha], y[M];
            for (int xi = 0; xi < kAlpha; ++xi) col[xi] = rows[xi][j];
            output_transform<M>(col, y);
            for (int i = 0; i < M; ++i)
              store(base + (static_cast<std::size_t>(i) * w + j) * C + c0, y[i]);
          }
        }
      }
    }
  }
}

// e[xi][t][o] = (A dy_t A^T)[xi]: each m x m tile of the output gradient, read from the
// interior of its padded channels-last images (offset p), lifted to the 6x6 positions.
template <int M>
void transform_output_grad(const float* padded, int C, int p, const Tiles& g, float* e) {
  const std::size_t plane = g.plane(C), image = static_cast<std::size_t>(g.hp) * g.wp * C;
  std::size_t t = 0;
  for (std::int64_t n = 0; n < g.count; ++n) {
    for (int ti = 0; ti < g.th; ++ti) {
      for (int tj = 0; tj < g.tw; ++tj, ++t) {
        const float* base = padded + static_cast<std::size_t>(n) * image +
                            (static_cast<std::size_t>(M * ti + p) * g.wp + M * tj + p) * C;
        for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
          v16 rows[M][kAlpha];
          for (int i = 0; i < M; ++i) {
            v16 d[M];
            for (int j = 0; j < M; ++j)
              d[j] = load(base + (static_cast<std::size_t>(i) * g.wp + j) * C + c0);
            output_transform_transposed<M>(d, rows[i]);
          }
          for (int nu = 0; nu < kAlpha; ++nu) {
            v16 col[M], out[kAlpha];
            for (int i = 0; i < M; ++i) col[i] = rows[i][nu];
            output_transform_transposed<M>(col, out);
            for (int xi = 0; xi < kAlpha; ++xi)
              store(e + (xi * kAlpha + nu) * plane + t * C + c0, out[xi]);
          }
        }
      }
    }
  }
}

Tiles tiles_of(const Shape& s, std::int64_t count) {
  return {s.m(), s.h / s.m(), s.w / s.m(), s.padded_w(), s.padded_h(), count};
}

void grow(AlignedBuffer& b, std::size_t n) {
  if (b.size() < n) b.resize(n);
}

// out (channels-last) = the convolution of the transformed input v[36][T][s.in_c] by u.
void multiply_and_transform(const Shape& s, const Tiles& g, const float* u, Workspace& ws) {
  const std::size_t T = g.total();
  const int ci = s.in_c, co = s.out_c;
  grow(ws.m, kPositions * g.plane(co));
  for (int xi = 0; xi < kPositions; ++xi)
    panel_gemm(static_cast<int>(T), co, ci, ws.v.data() + xi * g.plane(ci), ci, 1, u + xi * ci * co,
               co, ws.m.data() + xi * g.plane(co), co, false);
  grow(ws.out, static_cast<std::size_t>(g.count) * s.h * s.w * co);
  if (s.m() == 4)
    transform_output<4>(ws.m.data(), co, g, ws.out.data());
  else
    transform_output<2>(ws.m.data(), co, g, ws.out.data());
}

}  // namespace

bool supports(int kernel, int stride, int padding, int in_c, int out_c, int h, int w) {
  if ((kernel != 3 && kernel != 5) || stride != 1 || padding != kernel / 2) return false;
  const int m = kernel == 3 ? 4 : 2;
  return in_c > 0 && out_c > 0 && in_c % kChannelBlock == 0 && out_c % kChannelBlock == 0 &&
         h > 0 && w > 0 && h % m == 0 && w % m == 0;
}

std::int64_t group_size(const Shape& s) {
  const std::int64_t per_image = static_cast<std::int64_t>(s.tiles()) * std::max(s.in_c, s.out_c);
  return std::max<std::int64_t>(1, 2048 / per_image);
}

void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u) {
  // u[xi nu][row][lane] with lanes the 16-aligned dimension: out (forward) or in (input
  // gradient, whose filter [c][o] is w[o][c] turned by 180 degrees).
  const FilterTransform& G = filter_transform(r);
  const int rows = input_grad ? out : in, lanes = input_grad ? in : out, taps = r * r;
  for (int row = 0; row < rows; ++row) {
    for (int l0 = 0; l0 < lanes; l0 += kChannelBlock) {
      v16 tap[25];
      for (int t = 0; t < taps; ++t) {
        for (int l = 0; l < kChannelBlock; ++l) {
          const int o = input_grad ? row : l0 + l, c = input_grad ? l0 + l : row;
          tap[t][l] =
              w[(static_cast<std::size_t>(o) * in + c) * taps + (input_grad ? taps - 1 - t : t)];
        }
      }
      v16 half[kAlpha][5];  // G g: [xi][v]
      for (int xi = 0; xi < kAlpha; ++xi)
        for (int v = 0; v < r; ++v) {
          v16 s{};
          for (int k = 0; k < r; ++k) s += G.g[xi][k] * tap[k * r + v];
          half[xi][v] = s;
        }
      for (int xi = 0; xi < kAlpha; ++xi)
        for (int nu = 0; nu < kAlpha; ++nu) {
          v16 s{};
          for (int v = 0; v < r; ++v) s += G.g[nu][v] * half[xi][v];
          store(u + (static_cast<std::size_t>(xi * kAlpha + nu) * rows + row) * lanes + l0, s);
        }
    }
  }
}

void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,
                                  float* dw) {
  const FilterTransform& G = filter_transform(r);
  const int taps = r * r;
  for (int c = 0; c < in; ++c) {
    for (int o0 = 0; o0 < out; o0 += kChannelBlock) {
      v16 half[5][kAlpha];  // G^T dU: [u][nu]
      for (int u = 0; u < r; ++u)
        for (int nu = 0; nu < kAlpha; ++nu) {
          v16 s{};
          for (int xi = 0; xi < kAlpha; ++xi)
            s += G.g[xi][u] *
                 load(du + (static_cast<std::size_t>(xi * kAlpha + nu) * in + c) * out + o0);
          half[u][nu] = s;
        }
      for (int u = 0; u < r; ++u)
        for (int v = 0; v < r; ++v) {
          v16 s{};
          for (int nu = 0; nu < kAlpha; ++nu) s += G.g[nu][v] * half[u][nu];
          for (int l = 0; l < kChannelBlock; ++l) {
            float& dst = dw[(static_cast<std::size_t>(o0 + l) * in + c) * taps + u * r + v];
            dst = accumulate ? dst + s[l] : s[l];
          }
        }
    }
  }
}

void convolve(const Shape& s, const float* x, std::int64_t count, const float* u, const float* bias,
              float* y, Workspace& ws) {
  const Tiles g = tiles_of(s, count);
  const int p = s.r / 2;
  grow(ws.padded, static_cast<std::size_t>(count) * g.hp * g.wp * s.in_c);
  to_channels_last(x, s.in_c, s.h, s.w, p, count, ws.padded.data());
  grow(ws.v, kPositions * g.plane(s.in_c));
  transform_input(ws.padded.data(), s.in_c, g, ws.v.data());
  multiply_and_transform(s, g, u, ws);
  from_channels_last(ws.out.data(), s.out_c, s.h * s.w, bias, count, y);
}

void accumulate_weight_grad(const Shape& s, const float* x, const float* dy, std::int64_t count,
                            float* du, Workspace& ws) {
  const Tiles g = tiles_of(s, count);
  const std::size_t T = g.total();
  const int p = s.r / 2, ci = s.in_c, co = s.out_c;
  grow(ws.padded, static_cast<std::size_t>(count) * g.hp * g.wp * ci);
  to_channels_last(x, ci, s.h, s.w, p, count, ws.padded.data());
  grow(ws.v, kPositions * g.plane(ci));
  transform_input(ws.padded.data(), ci, g, ws.v.data());
  grow(ws.dy, static_cast<std::size_t>(count) * g.hp * g.wp * co);
  to_channels_last(dy, co, s.h, s.w, p, count, ws.dy.data());
  grow(ws.m, kPositions * g.plane(co));
  if (s.m() == 4)
    transform_output_grad<4>(ws.dy.data(), co, p, g, ws.m.data());
  else
    transform_output_grad<2>(ws.dy.data(), co, p, g, ws.m.data());
  // du[xi][c][o] += sum over tiles t of v[xi][t][c] e[xi][t][o]
  for (int xi = 0; xi < kPositions; ++xi)
    panel_gemm(ci, co, static_cast<int>(T), ws.v.data() + xi * g.plane(ci), 1, ci,
               ws.m.data() + xi * g.plane(co), co, du + static_cast<std::size_t>(xi) * ci * co, co,
               true);
}

void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u, float* dx,
                                  Workspace& ws) {
  const Shape swapped{s.out_c, s.in_c, s.h, s.w, s.r};
  const Tiles g = tiles_of(s, count);
  grow(ws.v, kPositions * g.plane(s.out_c));
  transform_input(ws.dy.data(), s.out_c, g, ws.v.data());
  multiply_and_transform(swapped, g, u, ws);
  from_channels_last(ws.out.data(), s.in_c, s.h * s.w, nullptr, count, dx);
}

}  // namespace lbt::nn::winograd
