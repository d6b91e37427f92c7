// Direct convolution over padded (or phase) planes, compiled once per ISA
// (cmake/isa_sources.cmake); see conv_direct.hpp.
#include "nn/cpu/conv_direct.hpp"

#include <algorithm>

#include "core/vec16.hpp"
#include "nn/cpu/short_rows.hpp"

namespace lbt::nn::conv_direct::LBT_ISA_NS {
namespace {

using vec::load;
using vec::store;
using vec::v16;

std::size_t round_up(std::size_t n, std::size_t m) {
  return (n + m - 1) / m * m;
}

// Register tiles per ISA. A vector of 16 floats is one of AVX-512's 32 zmm registers, two of
// AVX2's 16 ymm and four of SSE's 16 xmm registers; accumulators, loaded vectors and a
// broadcast must fit without spilling. kForwardOut output channels (dividing 8) x kForwardVecs
// vectors of positions in the forward kernel; kGradOut3 / kGradOut5 output channels x K taps in
// the weight gradient's (K = 3, 5).
#if defined(__AVX512F__)
constexpr int kForwardOut = 8, kForwardVecs = 2, kGradOut3 = 8, kGradOut5 = 4;
#elif defined(__AVX2__)
constexpr int kForwardOut = 4, kForwardVecs = 1, kGradOut3 = 1, kGradOut5 = 1;
#else
constexpr int kForwardOut = 2, kForwardVecs = 1, kGradOut3 = 1, kGradOut5 = 1;
#endif

// yp[o][q0 + q] for OB output channels o0.. and V * 16 positions from q0: OB x V accumulators;
// per channel and tap, V loads of the plane and OB broadcast weights feed OB V multiply-adds.
template <int T, int V, int OB>
inline void forward_block(const float* xp, int channels, std::size_t stride,
                          const std::size_t* offset, const float* wt, int out, std::size_t len,
                          int o0, std::size_t q0, float* yp) {
  v16 acc[OB][V] = {};
  for (int c = 0; c < channels; ++c) {
    const float* x = xp + static_cast<std::size_t>(c) * stride + q0;
    const float* w = wt + static_cast<std::size_t>(c) * T * out + o0;
    for (int t = 0; t < T; ++t) {
      v16 xv[V];
      for (int k = 0; k < V; ++k) xv[k] = load(x + offset[t] + 16 * k);
      const float* wt_t = w + t * out;
#pragma GCC unroll 8
      for (int o = 0; o < OB; ++o)
        for (int k = 0; k < V; ++k) acc[o][k] += wt_t[o] * xv[k];
    }
  }
  for (int o = 0; o < OB; ++o) {
    float* y = yp + static_cast<std::size_t>(o0 + o) * len + q0;
    for (int k = 0; k < V; ++k) store(y + 16 * k, acc[o][k]);
  }
}

// yp[o][q] = sum over channels c and taps t of wt[c][t][o] * xp[c * stride + q + offset[t]],
// for o < out (a multiple of 8), q < len (a multiple of 16): blocks of kForwardOut output
// channels x 16 kForwardVecs positions, and one of 16 positions where len is not a multiple of
// those (AVX-512, 8 x 32: the 8x8 outputs of ResNet's last stage, 80 positions computed for 64,
// not 96).
template <int T>
void forward_taps(const float* xp, int channels, std::size_t stride, const std::size_t* offset,
                  const float* wt, int out, std::size_t len, float* yp) {
  constexpr int OB = kForwardOut, V = kForwardVecs;
  for (int o0 = 0; o0 < out; o0 += OB) {
    std::size_t q0 = 0;
    for (; q0 + 16 * V <= len; q0 += 16 * V)
      forward_block<T, V, OB>(xp, channels, stride, offset, wt, out, len, o0, q0, yp);
    for (; q0 < len; q0 += 16)
      forward_block<T, 1, OB>(xp, channels, stride, offset, wt, out, len, o0, q0, yp);
  }
}

// The input gradient of a 3x3 stride-2 padding-1 convolution, one phase (a, b) of the padded
// input at a time. Padded input pixel (2R + a, 2S + b) received tap (u, v) of output
// (R - (u - a)/2, S - (v - b)/2) for the taps with u % 2 = a, v % 2 = b: {0, 2} or {1} per
// axis, so 4, 2, 2 or 1 taps. Over dy planes with one zero row on top and one zero column on
// the left (rows of out_w + 1, which is also the phase planes' row length), tap (u, v) reads
// at offset (1 - (u - a)/2) * row + (1 - (v - b)/2): the forward kernel again.
struct Stride2Phase {
  int a, b, taps, u[4], v[4];
};
constexpr Stride2Phase kStride2Phases[4] = {{0, 0, 4, {0, 0, 2, 2}, {0, 2, 0, 2}},
                                            {0, 1, 2, {0, 2}, {1, 1}},
                                            {1, 0, 2, {1, 1}, {0, 2}},
                                            {1, 1, 1, {1}, {1}}};

// Of each phase's out_h + 1 rows, the out_h that hold input pixels are computed: rows 1.. of
// phases a = 0 (row 0 is the top padding), 0.. of phases a = 1 (the last is the bottom padding).
struct Stride2Layout {
  int row, rows;              // dy planes: out_h + 2 rows of out_w + 1
  std::size_t dy_plane, len;  // floats per dy plane; phase positions computed (rounded to 16)
  explicit Stride2Layout(const Geometry& g)
      : row(g.out_w() + 1),
        rows(g.out_h() + 2),
        dy_plane(round_up(static_cast<std::size_t>(rows) * row + 32 + 2, 16)),
        len(round_up(static_cast<std::size_t>(g.out_h()) * row, 16)) {}
  std::size_t first_row(int a) const { return a == 0 ? 1 : 0; }
};

// One input channel, CB output channels and one window row u (K taps) at a time: CB*K
// accumulators of 16 lanes (AVX-512: 24 for K = 3 with CB = 8, 20 for K = 5 with CB = 4), fed
// per 16 positions by K plane loads and CB dy loads. Holding a whole K*K window instead left too
// few registers for the tap addresses (GCC spilled them: a stack load per multiply-add).
template <int K, int CB>
void weight_grad_k(const float* dyq, int out_channels, const float* xp, const Geometry& g,
                   float* lanes) {
  constexpr int T = K * K;
  std::size_t offset[T];
  for (int t = 0; t < T; ++t) offset[t] = g.offset(t);
  const std::size_t in_stride = g.channel_stride(), dy_stride = g.dy_stride();
  const std::size_t len = round_up(static_cast<std::size_t>(g.out_h()) * g.row(), 16);
  const std::size_t lane_stride = static_cast<std::size_t>(g.channels) * T * 16;  // next o
  for (int o0 = 0; o0 < out_channels; o0 += CB) {
    const float* dy = dyq + static_cast<std::size_t>(o0) * dy_stride;
    for (int c = 0; c < g.channels; ++c) {
      const float* x = xp + static_cast<std::size_t>(c) * in_stride;
      for (int u = 0; u < K; ++u) {
        float* lane = lanes + (static_cast<std::size_t>(o0) * g.channels + c) * T * 16 + u * K * 16;
        v16 acc[CB][K];
        for (int b = 0; b < CB; ++b)
          for (int v = 0; v < K; ++v) acc[b][v] = load(lane + b * lane_stride + v * 16);
        const float* xt[K];
        for (int v = 0; v < K; ++v) xt[v] = x + offset[u * K + v];
        for (std::size_t q = 0; q < len; q += 16) {
          v16 xv[K];
          for (int v = 0; v < K; ++v) xv[v] = load(xt[v] + q);
#pragma GCC unroll 8
          for (int b = 0; b < CB; ++b) {
            v16 d = load(dy + b * dy_stride + q);
            // Keep d in a register: GCC otherwise folds the load into each of the K FMAs,
            // loading every dy vector K times (perf annotate: load-bound at 37% of peak).
#if defined(__AVX512F__)
            asm("" : "+v"(d));
#endif
            for (int v = 0; v < K; ++v) acc[b][v] += d * xv[v];
          }
        }
        for (int b = 0; b < CB; ++b)
          for (int v = 0; v < K; ++v) store(lane + b * lane_stride + v * 16, acc[b][v]);
      }
    }
  }
}

}  // namespace

void forward(const float* xp, const Geometry& g, const float* wt, int out, float* yp) {
  std::size_t offset[25];
  for (int t = 0; t < g.k * g.k; ++t) offset[t] = g.offset(t);
  if (g.k == 3)
    forward_taps<9>(xp, g.channels, g.channel_stride(), offset, wt, out, g.out_len(), yp);
  else
    forward_taps<25>(xp, g.channels, g.channel_stride(), offset, wt, out, g.out_len(), yp);
}

void arrange_input_grad_stride2(const float* w, int out, int in, float* wf) {
  for (const Stride2Phase& ph : kStride2Phases) {
    for (int o = 0; o < out; ++o)
      for (int t = 0; t < ph.taps; ++t)
        for (int c = 0; c < in; ++c)
          wf[(static_cast<std::size_t>(o) * ph.taps + t) * in + c] =
              w[(static_cast<std::size_t>(o) * in + c) * 9 + ph.u[t] * 3 + ph.v[t]];
    wf += static_cast<std::size_t>(out) * ph.taps * in;
  }
}

std::size_t input_grad_stride2_scratch(const Geometry& g, int out_channels) {
  const Stride2Layout l(g);
  return static_cast<std::size_t>(out_channels) * l.dy_plane +
         4 * static_cast<std::size_t>(g.channels) * l.len;
}

LBT_NO_LIBCALL_LOOPS void input_grad_stride2(const float* dy, const Geometry& g, int out_channels,
                                             const float* wf, float* scratch, float* dx) {
  const Stride2Layout l(g);
  const int oh = g.out_h(), ow = g.out_w();
  float* dyp = scratch;
  float* phases = scratch + static_cast<std::size_t>(out_channels) * l.dy_plane;  // 4 x in x len
  for (int o = 0; o < out_channels; ++o) {  // dy inside a zero top row and left column
    float* d = dyp + static_cast<std::size_t>(o) * l.dy_plane;
    zero_row(d, static_cast<std::int64_t>(l.dy_plane));
    for (int i = 0; i < oh; ++i)
      copy_row(d + static_cast<std::size_t>(i + 1) * l.row + 1,
               dy + (static_cast<std::size_t>(o) * oh + i) * ow, ow);
  }
  for (const Stride2Phase& ph : kStride2Phases) {
    std::size_t offset[4];
    for (int t = 0; t < ph.taps; ++t)
      offset[t] =
          static_cast<std::size_t>(1 - (ph.u[t] - ph.a) / 2) * l.row + (1 - (ph.v[t] - ph.b) / 2);
    float* out = phases + static_cast<std::size_t>(ph.a * 2 + ph.b) * g.channels * l.len;
    const float* in = dyp + l.first_row(ph.a) * l.row;  // position 0: the first computed row
    switch (ph.taps) {
      case 4:
        forward_taps<4>(in, out_channels, l.dy_plane, offset, wf, g.channels, l.len, out);
        break;
      case 2:
        forward_taps<2>(in, out_channels, l.dy_plane, offset, wf, g.channels, l.len, out);
        break;
      default:
        forward_taps<1>(in, out_channels, l.dy_plane, offset, wf, g.channels, l.len, out);
    }
    wf += static_cast<std::size_t>(out_channels) * ph.taps * g.channels;
  }
  // Padded pixel (2R + a, 2S + b) is input pixel (2R + a - 1, 2S + b - 1): input row i is row
  // R = (i + 1) / 2 of the phases a = (i + 1) % 2, its even columns 2k from phase b = 1 at
  // S = k and its odd ones 2k + 1 from phase b = 0 at S = k + 1, interleaved by shuffles.
  const std::size_t phase_stride = static_cast<std::size_t>(g.channels) * l.len;
  for (int c = 0; c < g.channels; ++c) {
    float* dst = dx + static_cast<std::size_t>(c) * g.h * g.w;
    for (int i = 0; i < g.h; ++i) {
      const int a = (i + 1) % 2;
      const std::size_t at = static_cast<std::size_t>(c) * l.len +
                             (static_cast<std::size_t>((i + 1) / 2) - l.first_row(a)) * l.row;
      const float* even_cols = phases + (2 * a + 1) * phase_stride + at;
      const float* odd_cols = phases + (2 * a) * phase_stride + at + 1;
      float* line = dst + static_cast<std::size_t>(i) * g.w;
      for (int k0 = 0; k0 < g.w / 2; k0 += 16) {
        const int n = std::min(16, g.w / 2 - k0), first = std::min(2 * n, 16);
        const v16 e = vec::load_first(even_cols + k0, n), o = vec::load_first(odd_cols + k0, n);
        vec::store_first(line + 2 * k0, vec::interleave_low(e, o), first);
        vec::store_first(line + 2 * k0 + 16, vec::interleave_high(e, o), 2 * n - first);
      }
    }
  }
}

void weight_grad_lanes(const float* dyq, int out_channels, const float* xp, const Geometry& g,
                       float* lanes) {
  if (g.k == 3)
    weight_grad_k<3, kGradOut3>(dyq, out_channels, xp, g, lanes);
  else
    weight_grad_k<5, kGradOut5>(dyq, out_channels, xp, g, lanes);
}

void reduce_lanes(const float* const* lanes, int parts, std::size_t n, bool accumulate, float* dw) {
#pragma omp parallel for schedule(static) if (n > 8192)
  for (std::size_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int p = 0; p < parts; ++p) {
      const float* l = lanes[p] + i * 16;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int j = 0; j < 16; ++j) s += l[j];
      sum += s;
    }
    dw[i] = accumulate ? dw[i] + sum : sum;
  }
}

}  // namespace lbt::nn::conv_direct::LBT_ISA_NS
