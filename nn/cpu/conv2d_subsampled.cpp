// Conv2d's path for 1x1 stride-2 convolutions (ResNet's projection shortcuts); see conv2d.hpp.
// Such a convolution is a pointwise product on the subsampled image xs[c][i][j] = x[c][2i][2j]:
//   forward:        y_n = W xs_n                              [out_c, HWo]
//   weight grad.:   dW (+)= dy_n xs_n^T                        (xs_n transposed: [HWo, in_c])
//   input gradient: dx_n[c][2i][2j] = (W^T dy_n)[c][i][j], zero at the other pixels
// The products go through panel_gemm, each thread on its own images. im2col + OpenBLAS took
// 2.1 ms of a ResNet-8 step at batch 128 for these two layers' 33 MFLOP each way: copies into
// padded planes, OpenBLAS's packing, col2im's zero fill and scatter, all for a few multiplies.
#include <omp.h>

#include <algorithm>

#include "core/panel_gemm.hpp"
#include "core/vec16.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/short_rows.hpp"

namespace lbt::nn {
namespace {

using vec::load;
using vec::load_first;
using vec::store;
using vec::store_first;
using vec::v16;

// xs[c][i * wo + j] = x[c][2i][2j] for C planes of h x w (even), wo = w / 2.
void subsample(const float* x, std::int64_t C, std::int64_t h, std::int64_t w, float* xs) {
  const std::int64_t ho = h / 2, wo = w / 2;
  for (std::int64_t c = 0; c < C; ++c) {
    for (std::int64_t i = 0; i < ho; ++i) {
      const float* row = x + (c * h + 2 * i) * w;
      float* out = xs + (c * ho + i) * wo;
      for (std::int64_t j0 = 0; j0 < wo; j0 += 16) {
        const int len = static_cast<int>(std::min<std::int64_t>(16, wo - j0));
        const v16 lo = load_first(row + 2 * j0, std::min(16, 2 * len));
        const v16 hi = load_first(row + 2 * j0 + 16, std::max(0, 2 * len - 16));
        store_first(out + j0, vec::even_of(lo, hi), len);
      }
    }
  }
}

// dx[c][2i][2j] = dxs[c][i * wo + j], zeros at the other pixels; with `add`, dx[c][2i][2j] +=
// and the other pixels are left as they are.
void upsample(const float* dxs, std::int64_t C, std::int64_t h, std::int64_t w, bool add,
              float* dx) {
  const std::int64_t ho = h / 2, wo = w / 2;
  for (std::int64_t c = 0; c < C; ++c) {
    for (std::int64_t i = 0; i < ho; ++i) {
      const float* in = dxs + (c * ho + i) * wo;
      float* even = dx + (c * h + 2 * i) * w;
      for (std::int64_t j0 = 0; j0 < wo; j0 += 16) {
        const int len = static_cast<int>(std::min<std::int64_t>(16, wo - j0));
        const v16 v = load_first(in + j0, len);
        const int len_low = std::min(16, 2 * len), len_high = std::max(0, 2 * len - 16);
        v16 low = vec::interleave_low(v, v16{}), high = vec::interleave_high(v, v16{});
        if (add) {
          low += load_first(even + 2 * j0, len_low);
          high += load_first(even + 2 * j0 + 16, len_high);
        }
        store_first(even + 2 * j0, low, len_low);
        store_first(even + 2 * j0 + 16, high, len_high);
      }
      if (!add) zero_row(even + w, w);  // the odd row
    }
  }
}

// t[q][c] = xs[c][q] for C (a multiple of 16) rows of n (a multiple of 16) floats.
void transpose_planes(const float* xs, std::int64_t C, std::int64_t n, float* t) {
  for (std::int64_t c0 = 0; c0 < C; c0 += 16) {
    for (std::int64_t q0 = 0; q0 < n; q0 += 16) {
      v16 r[16];
      for (int l = 0; l < 16; ++l) r[l] = load(xs + (c0 + l) * n + q0);
      vec::transpose16(r);
      for (int k = 0; k < 16; ++k) store(t + (q0 + k) * C + c0, r[k]);
    }
  }
}

}  // namespace

bool Conv2d::subsampled_pointwise() const {
  return opt_.allow_direct && opt_.kernel == 1 && opt_.stride == 2 && opt_.padding == 0 &&
         in_.h % 2 == 0 && in_.w % 2 == 0 && in_.c % 16 == 0 && out_.c % 16 == 0 &&
         out_.plane() % 16 == 0;
}

void Conv2d::forward_subsampled(const float* x, float* y, std::int64_t batch) {
  const int threads = threads_for(batch);
  const std::int64_t N = out_.plane();
  const std::size_t xs_size = static_cast<std::size_t>(in_.c * N);
  if (col_.size() < static_cast<std::size_t>(threads))
    col_.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workspace(t, xs_size);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t n = 0; n < batch; ++n) {
    float* xs = col_[static_cast<std::size_t>(omp_get_thread_num())].data();
    subsample(x + n * in_.size(), in_.c, in_.h, in_.w, xs);
    float* yn = y + n * out_.size();
    panel_gemm(static_cast<int>(out_.c), static_cast<int>(N), static_cast<int>(in_.c), w_, in_.c, 1,
               xs, N, yn, N, false);
    for (std::int64_t o = 0; b_ && o < out_.c; ++o)
      for (std::int64_t q = 0; q < N; ++q) yn[o * N + q] += b_[o];
  }
}

void Conv2d::backward_subsampled(const float* x, const float* dy, float* dx, std::int64_t batch,
                                 bool accumulate, bool add_to_dx, const BatchNormGradMap* dy_map) {
  const int threads = threads_for(batch);
  const auto T = static_cast<std::size_t>(threads);
  const int M = static_cast<int>(out_.c), C = static_cast<int>(in_.c),
            N = static_cast<int>(out_.plane());
  const std::size_t plane_floats = static_cast<std::size_t>(C) * N;
  const std::size_t wsize = static_cast<std::size_t>(M) * C, bsize = b_ ? out_.c : 0;
  // Per-thread scratch of the im2col path, borrowed: xs (col_), xs^T (dy_group_), W^T dy (dcol_).
  for (auto* v : {&col_, &dy_group_, &dcol_, &dw_part_})
    if (v->size() < T) v->resize(T);
  for (std::size_t t = 0; t < T; ++t) {
    for (auto* b : {&col_[t], &dy_group_[t], &dcol_[t]})
      if (b->size() < plane_floats) b->resize(plane_floats);
    if (dw_part_[t].size() < wsize + bsize) dw_part_[t].resize(wsize + bsize);
  }
  if (dy_map) {  // per thread, one image's mapped dy (the direct path's dy planes, unused here)
    if (plane_ws_.size() < T) plane_ws_.resize(T);
    for (std::size_t t = 0; t < T; ++t)
      if (plane_ws_[t].dy.size() < static_cast<std::size_t>(out_.size()))
        plane_ws_[t].dy.resize(static_cast<std::size_t>(out_.size()));
  }
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    float *xs = col_[t].data(), *xs_t = dy_group_[t].data(), *dxs = dcol_[t].data();
    float* dw_t = dw_part_[t].data();  // [out_c, in_c], then db [out_c]
    std::fill(dw_t, dw_t + wsize + bsize, 0.0f);
#pragma omp for schedule(static)
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* dyn = dy + n * out_.size();
      if (dy_map) {
        apply_batch_norm_grad(dy_map->advanced(n * out_.size()), dyn, M, N, plane_ws_[t].dy.data());
        dyn = plane_ws_[t].dy.data();
      }
      subsample(x + n * in_.size(), C, in_.h, in_.w, xs);
      transpose_planes(xs, C, N, xs_t);
      panel_gemm(M, C, N, dyn, N, 1, xs_t, C, dw_t, C, true);
      if (b_) add_bias_grad(dyn, false, dw_t + wsize);
      if (!dx) continue;
      // dxs [in_c, HWo] = W^T dy_n: A(c, o) = w[o][c].
      panel_gemm(C, N, M, w_, 1, C, dyn, N, dxs, N, false);
      upsample(dxs, C, in_.h, in_.w, add_to_dx, dx + n * in_.size());
    }
  }
  add_up_partials(threads, 0, accumulate);
}

}  // namespace lbt::nn
