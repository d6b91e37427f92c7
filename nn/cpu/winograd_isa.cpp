// Winograd F(4x4, 3x3) and F(4x4, 5x5) convolution, compiled once per ISA
// (cmake/isa_sources.cmake); see winograd.hpp.
#include "nn/cpu/winograd.hpp"

#include <algorithm>

#include "core/panel_gemm.hpp"
#include "core/vec16.hpp"
#include "nn/cpu/channels_last.hpp"

namespace lbt::nn::winograd::LBT_ISA_NS {
namespace {

using vec::load;
using vec::store;
using vec::v16;

constexpr int kMaxAlpha = 8;

// Floats from one tile position's in x out matrix of transformed weights (or their gradient)
// to the next: one cache line more than the matrix, so that the alpha^2 vectors the filter
// transform writes (and its inverse reads) for one filter block do not all fall in one L1 set
// when in x out is a multiple of 1024 (32 and 64 channels: 36 lines in a 12-way set; the
// transforms ran 10x slower than their arithmetic).
std::size_t weight_plane(int in, int out) {
  return static_cast<std::size_t>(in) * static_cast<std::size_t>(out) + kChannelBlock;
}

// The filter transform G (alpha x r) for the points 0, 1, -1, 2, -2 (, 1/2, -1/2) and infinity:
// row j holds p_j^k / f_j with f_j = prod over the other finite points l of (p_j - p_l); the
// row of the point at infinity picks the filter's last tap (Lavin & Gray 2016, section 4).
struct FilterTransform {
  int alpha;
  float g[kMaxAlpha][5] = {};
  explicit FilterTransform(int r) : alpha(kTile + r - 1) {
    constexpr double points[kMaxAlpha - 1] = {0, 1, -1, 2, -2, 0.5, -0.5};
    const int finite = alpha - 1;
    for (int j = 0; j < finite; ++j) {
      double f = 1.0, power = 1.0;
      for (int l = 0; l < finite; ++l)
        if (l != j) f *= points[j] - points[l];
      for (int k = 0; k < r; ++k, power *= points[j]) g[j][k] = static_cast<float>(power / f);
    }
    g[finite][r - 1] = 1.0f;
  }
};

const FilterTransform& filter_transform(int r) {
  static const FilterTransform g3(3), g5(5);
  return r == 3 ? g3 : g5;
}

// The data transform out = B^T d for one column of ALPHA. Rows for the points +-p pair up as
// (even part) +- (odd part).
template <int ALPHA>
inline void data_transform(const v16* d, v16* out) {
  if constexpr (ALPHA == 6) {
    out[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    out[1] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
    out[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
    out[3] = 2.0f * (d[3] - d[1]) - d[2] + d[4];
    out[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
    out[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
  } else {
    const v16 e1 = d[2] - 4.25f * d[4] + d[6], o1 = d[1] - 4.25f * d[3] + d[5];
    const v16 e2 = 0.25f * d[2] - 1.25f * d[4] + d[6], o2 = 0.5f * d[1] - 2.5f * d[3] + 2.0f * d[5];
    const v16 e3 = 4.0f * d[2] - 5.0f * d[4] + d[6], o3 = 2.0f * d[1] - 2.5f * d[3] + 0.5f * d[5];
    out[0] = d[6] - d[0] + 5.25f * (d[2] - d[4]);
    out[1] = e1 + o1;
    out[2] = e1 - o1;
    out[3] = e2 + o2;
    out[4] = e2 - o2;
    out[5] = e3 + o3;
    out[6] = e3 - o3;
    out[7] = d[7] - d[1] + 5.25f * (d[3] - d[5]);
  }
}

// The output transform y = A^T m: 4 outputs from one column of ALPHA.
template <int ALPHA>
inline void output_transform(const v16* m, v16* y) {
  const v16 a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
  if constexpr (ALPHA == 6) {
    y[0] = m[0] + a + c;
    y[1] = b + 2.0f * d;
    y[2] = a + 4.0f * c;
    y[3] = b + 8.0f * d + m[5];
  } else {
    const v16 e = m[5] + m[6], f = m[5] - m[6];
    y[0] = m[0] + a + c + e;
    y[1] = b + 2.0f * d + 0.5f * f;
    y[2] = a + 4.0f * c + 0.25f * e;
    y[3] = b + 8.0f * d + 0.125f * f + m[7];
  }
}

// Its transpose, for the weight gradient: e = A d, ALPHA values from a column of 4 output
// gradients.
template <int ALPHA>
inline void output_transform_transposed(const v16* d, v16* e) {
  const v16 even = d[0] + d[2], odd = d[1] + d[3];
  const v16 even4 = d[0] + 4.0f * d[2], odd4 = 2.0f * d[1] + 8.0f * d[3];
  e[0] = d[0];
  e[1] = even + odd;
  e[2] = even - odd;
  e[3] = even4 + odd4;
  e[4] = even4 - odd4;
  if constexpr (ALPHA == 6) {
    e[5] = d[3];
  } else {
    const v16 even_q = d[0] + 0.25f * d[2], odd_q = 0.5f * d[1] + 0.125f * d[3];
    e[5] = even_q + odd_q;
    e[6] = even_q - odd_q;
    e[7] = d[3];
  }
}

// Geometry of one call's tiles: `count` images of th x tw tiles, on padded channels-last
// images hp x wp; outputs h x w.
struct Tiles {
  int alpha, th, tw, hp, wp, h, w;
  std::int64_t count;
  int positions() const { return alpha * alpha; }
  std::size_t total() const { return static_cast<std::size_t>(count) * th * tw; }
  // Floats from one transformed position's [tile][channel] matrix to the next: one cache line
  // more than its size, so that the alpha^2 rows a transform reads or writes do not all fall
  // in the same L1 set when the size is a power of two (ResNet's layers: 16 KiB to 64 KiB).
  std::size_t plane(int C) const { return total() * C + kChannelBlock; }
};

// v[xi][t][c] = (F d_t F^T)[xi] for every IN x IN tile d_t, at (4 ti + off, 4 tj + off) of the
// padded channels-last images, with F the 1-D transform Lift from IN to ALPHA values: the data
// transform B^T (IN = ALPHA, off = 0) or the output gradient's A (IN = 4, off = the padding).
template <int IN, int ALPHA, void (*Lift)(const v16*, v16*)>
void lift_tiles(const float* padded, int C, int off, const Tiles& g, float* v) {
  const std::size_t plane = g.plane(C), image = static_cast<std::size_t>(g.hp) * g.wp * C;
  std::size_t t = 0;
  for (std::int64_t n = 0; n < g.count; ++n) {
    for (int ti = 0; ti < g.th; ++ti) {
      for (int tj = 0; tj < g.tw; ++tj, ++t) {
        const float* base =
            padded + static_cast<std::size_t>(n) * image +
            (static_cast<std::size_t>(kTile * ti + off) * g.wp + kTile * tj + off) * C;
        for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
          v16 rows[IN][ALPHA];
          for (int u = 0; u < IN; ++u) {
            v16 d[IN];
            for (int x = 0; x < IN; ++x)
              d[x] = load(base + (static_cast<std::size_t>(u) * g.wp + x) * C + c0);
            Lift(d, rows[u]);
          }
          for (int nu = 0; nu < ALPHA; ++nu) {
            v16 col[IN], out[ALPHA];
            for (int u = 0; u < IN; ++u) col[u] = rows[u][nu];
            Lift(col, out);
            for (int xi = 0; xi < ALPHA; ++xi)
              store(v + (xi * ALPHA + nu) * plane + t * C + c0, out[xi]);
          }
        }
      }
    }
  }
}

// out[n][(4 ti + i) * w + 4 tj + j][o] = (A^T m_t A)[i][j] for the outputs inside the image:
// the tiles' outputs, channels-last.
template <int ALPHA>
void transform_output(const float* prod, int C, const Tiles& g, float* out) {
  const std::size_t plane = g.plane(C), image = static_cast<std::size_t>(g.h) * g.w * C;
  std::size_t t = 0;
  for (std::int64_t n = 0; n < g.count; ++n) {
    for (int ti = 0; ti < g.th; ++ti) {
      const int rows_in = std::min(kTile, g.h - kTile * ti);
      for (int tj = 0; tj < g.tw; ++tj, ++t) {
        const int cols_in = std::min(kTile, g.w - kTile * tj);
        float* base = out + static_cast<std::size_t>(n) * image +
                      (static_cast<std::size_t>(kTile * ti) * g.w + kTile * tj) * C;
        for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
          v16 rows[ALPHA][kTile];
          for (int xi = 0; xi < ALPHA; ++xi) {
            v16 mm[ALPHA];
            for (int nu = 0; nu < ALPHA; ++nu)
              mm[nu] = load(prod + (xi * ALPHA + nu) * plane + t * C + c0);
            output_transform<ALPHA>(mm, rows[xi]);
          }
          for (int j = 0; j < cols_in; ++j) {
            v16 col[ALPHA], y[kTile];
            for (int xi = 0; xi < ALPHA; ++xi) col[xi] = rows[xi][j];
            output_transform<ALPHA>(col, y);
            for (int i = 0; i < rows_in; ++i)
              store(base + (static_cast<std::size_t>(i) * g.w + j) * C + c0, y[i]);
          }
        }
      }
    }
  }
}

Tiles tiles_of(const Shape& s, std::int64_t count) {
  return {s.alpha(), s.tiles_h(), s.tiles_w(), s.padded_h(), s.padded_w(), s.h, s.w, count};
}

void grow(AlignedBuffer& b, std::size_t n) {
  if (b.size() < n) b.resize(n);
}

// ws.v[xi][t][c] from the padded channels-last images at `padded`.
void transform_input_into(const float* padded, int C, const Tiles& g, Workspace& ws) {
  grow(ws.v, static_cast<std::size_t>(g.positions()) * g.plane(C));
  if (g.alpha == 6)
    lift_tiles<6, 6, data_transform<6>>(padded, C, 0, g, ws.v.data());
  else
    lift_tiles<8, 8, data_transform<8>>(padded, C, 0, g, ws.v.data());
}

// ws.out (channels-last) = the convolution of the transformed input ws.v[xi][t][s.in_c] by u.
void multiply_and_transform(const Shape& s, const Tiles& g, const float* u, Workspace& ws) {
  const std::size_t T = g.total();
  const int ci = s.in_c, co = s.out_c;
  grow(ws.m, static_cast<std::size_t>(g.positions()) * g.plane(co));
  for (int xi = 0; xi < g.positions(); ++xi)
    panel_gemm(static_cast<int>(T), co, ci, ws.v.data() + xi * g.plane(ci), ci, 1,
               u + xi * weight_plane(ci, co), co, ws.m.data() + xi * g.plane(co), co, false);
  grow(ws.out, static_cast<std::size_t>(g.count) * s.h * s.w * co);
  if (g.alpha == 6)
    transform_output<6>(ws.m.data(), co, g, ws.out.data());
  else
    transform_output<8>(ws.m.data(), co, g, ws.out.data());
}

}  // namespace

std::size_t transformed_size(int r, int in, int out) {
  return static_cast<std::size_t>(Shape{in, out, 0, 0, r}.positions()) * weight_plane(in, out);
}

void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u) {
  // u[xi nu][row][lane] with lanes the 16-aligned dimension: out (forward) or in (input
  // gradient, whose filter [c][o] is w[o][c] turned by 180 degrees).
  const FilterTransform& G = filter_transform(r);
  const int alpha = G.alpha, rows = input_grad ? out : in, lanes = input_grad ? in : out;
  const int taps = r * r;
  // Once per step, outside the per-image loops: split across the threads, which would
  // otherwise wait (a few percent of a batch-32 step).
#pragma omp parallel for schedule(static) if (rows >= 16)
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
      v16 half[kMaxAlpha][5];  // G g: [xi][v]
      for (int xi = 0; xi < alpha; ++xi)
        for (int v = 0; v < r; ++v) {
          v16 s{};
          for (int k = 0; k < r; ++k) s += G.g[xi][k] * tap[k * r + v];
          half[xi][v] = s;
        }
      for (int xi = 0; xi < alpha; ++xi)
        for (int nu = 0; nu < alpha; ++nu) {
          v16 s{};
          for (int v = 0; v < r; ++v) s += G.g[nu][v] * half[xi][v];
          store(u + (xi * alpha + nu) * weight_plane(rows, lanes) +
                    static_cast<std::size_t>(row) * lanes + l0,
                s);
        }
    }
  }
}

void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,
                                  float* dw) {
  const FilterTransform& G = filter_transform(r);
  const int alpha = G.alpha, taps = r * r;
#pragma omp parallel for schedule(static) if (in >= 16)
  for (int c = 0; c < in; ++c) {
    for (int o0 = 0; o0 < out; o0 += kChannelBlock) {
      v16 half[5][kMaxAlpha];  // G^T dU: [u][nu]
      for (int u = 0; u < r; ++u)
        for (int nu = 0; nu < alpha; ++nu) {
          v16 s{};
          for (int xi = 0; xi < alpha; ++xi)
            s += G.g[xi][u] * load(du + (xi * alpha + nu) * weight_plane(in, out) +
                                   static_cast<std::size_t>(c) * out + o0);
          half[u][nu] = s;
        }
      for (int u = 0; u < r; ++u)
        for (int v = 0; v < r; ++v) {
          v16 s{};
          for (int nu = 0; nu < alpha; ++nu) s += G.g[nu][v] * half[u][nu];
          for (int l = 0; l < kChannelBlock; ++l) {
            float& dst = dw[(static_cast<std::size_t>(o0 + l) * in + c) * taps + u * r + v];
            dst = accumulate ? dst + s[l] : s[l];
          }
        }
    }
  }
}

void convolve(const Shape& s, const float* x, std::int64_t count, const float* u, const float* bias,
              float* y, Workspace& ws, const ChannelAffine* x_affine, float* y_moments) {
  const Tiles g = tiles_of(s, count);
  grow(ws.padded, static_cast<std::size_t>(count) * g.hp * g.wp * s.in_c);
  to_channels_last(x, s.in_c, s.h, s.w, s.r / 2, g.hp, g.wp, count, ws.padded.data(), x_affine);
  transform_input_into(ws.padded.data(), s.in_c, g, ws);
  multiply_and_transform(s, g, u, ws);
  from_channels_last(ws.out.data(), s.out_c, s.h * s.w, bias, count, y, nullptr, y_moments);
}

void accumulate_weight_grad(const Shape& s, const float* x, const float* dy, std::int64_t count,
                            float* du, Workspace& ws, const ChannelAffine* x_affine,
                            const BatchNormGradMap* dy_map) {
  const Tiles g = tiles_of(s, count);
  const std::size_t T = g.total();
  const int p = s.r / 2, ci = s.in_c, co = s.out_c;
  grow(ws.padded, static_cast<std::size_t>(count) * g.hp * g.wp * ci);
  to_channels_last(x, ci, s.h, s.w, p, g.hp, g.wp, count, ws.padded.data(), x_affine);
  transform_input_into(ws.padded.data(), ci, g, ws);
  grow(ws.dy, static_cast<std::size_t>(count) * g.hp * g.wp * co);
  to_channels_last(dy, co, s.h, s.w, p, g.hp, g.wp, count, ws.dy.data(), nullptr, dy_map);
  grow(ws.m, static_cast<std::size_t>(g.positions()) * g.plane(co));
  // e[xi][t][o] = (A dy_t A^T)[xi]: each 4x4 tile of the output gradient (zeros past the
  // image) lifted to the alpha^2 positions.
  if (g.alpha == 6)
    lift_tiles<kTile, 6, output_transform_transposed<6>>(ws.dy.data(), co, p, g, ws.m.data());
  else
    lift_tiles<kTile, 8, output_transform_transposed<8>>(ws.dy.data(), co, p, g, ws.m.data());
  // du[xi][c][o] += sum over tiles t of v[xi][t][c] e[xi][t][o]
  for (int xi = 0; xi < g.positions(); ++xi)
    panel_gemm(ci, co, static_cast<int>(T), ws.v.data() + xi * g.plane(ci), 1, ci,
               ws.m.data() + xi * g.plane(co), co, du + xi * weight_plane(ci, co), co, true);
}

void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u, float* dx,
                                  Workspace& ws, const float* dx_addend) {
  const Shape swapped{s.out_c, s.in_c, s.h, s.w, s.r};
  const Tiles g = tiles_of(s, count);
  transform_input_into(ws.dy.data(), s.out_c, g, ws);
  multiply_and_transform(swapped, g, u, ws);
  from_channels_last(ws.out.data(), s.in_c, s.h * s.w, nullptr, count, dx, dx_addend);
}

}  // namespace lbt::nn::winograd::LBT_ISA_NS
