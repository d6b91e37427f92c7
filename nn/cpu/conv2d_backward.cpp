// Conv2d::backward; see conv2d.hpp. Per image n (threads split the batch):
//   dW (+)= dy_n * windows of x_n   lanes over padded planes (3x3 with outputs >= 16x16), else
//                                   dy_n[out_c, HWo] col^T with col = im2col(x_n) (a GEMM:
//                                   panel_gemm into dW^T on small planes, else OpenBLAS),
//                                   for a group of images at once (dw_group)
//   db (+)= row sums of dy_n
//   dx_n = W^T dy_n                 the direct kernel over dy_n's padded planes with W flipped
//                                   (stride 1) or per input phase (stride 2), when in_c is a
//                                   multiple of 8; else dcol = W^T dy_n and col2im(dcol)
// Each thread sums into its own partials; they are added up after the loop. The column matrix
// is recomputed here rather than stored by the forward: storing it would cost batch x rows x
// HWo floats (300 MB for the simple CNN at batch 512) for a cheap copy.
#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "core/gemm.hpp"
#include "core/panel_gemm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/conv_direct.hpp"
#include "nn/cpu/parallel_chunks.hpp"

namespace lbt::nn {

// Output planes up to this size (ResNet's 8x8 and 16x16 stages) take the im2col weight
// gradient through panel_gemm into dW^T: OpenBLAS, called by both threads at once on these
// small products, took 2.4 to 6.6 ms for the 32->64 stride-2 layer at batch 128 where
// panel_gemm takes 1.2 ms (+2% on a ResNet-8 step). Larger planes (the simple CNN's first
// layer, 28x28) stay on OpenBLAS: transposing their dy cost more than it saved.
constexpr std::int64_t kPanelPlaneMax = 256;

// Images per weight-gradient GEMM on the im2col path. One image's GEMM has only out_h*out_w
// positions as its inner dimension (64 for ResNet's 8x8 stage), so it mostly reads and writes
// dW; a group puts images' column matrices and dy side by side until the inner dimension
// reaches ~256. At most 8 images, each thread's share of the batch, and 2 MiB of columns.
std::int64_t Conv2d::dw_group(std::int64_t batch, int threads) const {
  const std::int64_t N = out_.plane();
  std::int64_t g = std::min<std::int64_t>(
      {(256 + N - 1) / N, 8, std::max<std::int64_t>(1, batch / std::max(threads, 1))});
  while (g > 1 &&
         g * rows_ * N * static_cast<std::int64_t>(sizeof(float)) > (std::int64_t{2} << 20))
    --g;
  return std::max<std::int64_t>(g, 1);
}

void Conv2d::reserve_backward(int threads, bool dx_direct, bool need_col, bool dx,
                              std::int64_t group) {
  const auto T = static_cast<std::size_t>(threads);
  const std::size_t col_size = static_cast<std::size_t>(rows_ * out_.plane());
  const std::size_t wsize = static_cast<std::size_t>(out_.c * rows_), bsize = b_ ? out_.c : 0;
  if (col_.size() < T) col_.resize(T);
  if (dy_group_.size() < T) dy_group_.resize(T);
  if (dcol_.size() < T) dcol_.resize(T);
  if (dw_part_.size() < T) dw_part_.resize(T);
  if (plane_ws_.size() < T) plane_ws_.resize(T);
  const conv_direct::Geometry in_g = plane_geometry();
  for (std::size_t t = 0; t < T; ++t) {
    if (need_col) workspace(static_cast<int>(t), col_size * static_cast<std::size_t>(group));
    // A group's dy side by side (sgemm path) or transposed (panel path, any group size).
    const bool panel_dw = need_col && out_.c % 16 == 0 && out_.plane() <= kPanelPlaneMax;
    const std::size_t dy_size =
        group > 1 || panel_dw ? static_cast<std::size_t>(out_.size() * group) : 0;
    if (dy_group_[t].size() < dy_size) dy_group_[t].resize(dy_size);
    if (dx && !dx_direct && !pointwise() && dcol_[t].size() < col_size) dcol_[t].resize(col_size);
    if (dw_part_[t].size() < wsize + bsize) dw_part_[t].resize(wsize + bsize);
    PlaneWorkspace& ws = plane_ws_[t];
    const bool dx_planes = dx_direct && opt_.stride == 1;  // reads dy's padded planes
    if ((dw_lanes_ || dx_planes) && ws.dy.size() < out_.c * in_g.dy_stride())
      ws.dy.resize(out_.c * in_g.dy_stride());
    if (dw_lanes_ && ws.x.size() < in_.c * in_g.channel_stride())
      ws.x.resize(in_.c * in_g.channel_stride());
    if (dw_lanes_ && ws.lanes.size() < wsize * 16) ws.lanes.resize(wsize * 16);
    const std::size_t out_size =
        !dx_direct  ? 0
        : dx_planes ? in_.c * in_g.out_len()
                    : conv_direct::input_grad_stride2_scratch(in_g, static_cast<int>(out_.c));
    if (ws.out.size() < out_size) ws.out.resize(out_size);
  }
}

void Conv2d::add_bias_grad(const float* dyn, bool first, float* db_t) const {
  const std::int64_t N = out_.plane();
  for (std::int64_t o = 0; o < out_.c; ++o) {
    const float* g = dyn + o * N;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = 0; i < N; ++i) s += g[i];
    db_t[o] = first ? s : db_t[o] + s;
  }
}

void Conv2d::backward(const float* x, const float*, const float* dy, float* dx, std::int64_t batch,
                      bool accumulate) {
  if (onednn_) return onednn_->backward(x, w_, dy, dx, dw_, batch, accumulate);
  if (winograd_) return backward_winograd(x, dy, dx, batch, accumulate);
  if (subsampled_) return backward_subsampled(x, dy, dx, batch, accumulate);
  backward_direct_or_im2col(x, dy, dx, batch, accumulate, nullptr);
}

void Conv2d::backward_direct_or_im2col(const float* x, const float* dy, float* dx,
                                       std::int64_t batch, bool accumulate,
                                       const BatchNormGradMap* dy_map) {
  const int threads = threads_for(batch);
  const int M = static_cast<int>(out_.c), N = static_cast<int>(out_.plane()),
            K = static_cast<int>(rows_);
  const int k = static_cast<int>(opt_.kernel), in_c = static_cast<int>(in_.c);
  const std::size_t wsize = static_cast<std::size_t>(M) * K,
                    bsize = b_ ? static_cast<std::size_t>(M) : 0;
  // The input gradient runs the forward kernel with in_c as its output channels: blocks of 8.
  const bool dx_direct = dx && planes_ && in_c % 8 == 0;
  const bool dx_planes = dx_direct && opt_.stride == 1;
  const bool need_col = !dw_lanes_ && !pointwise();
  // dw_part_ holds dW^T [rows, out_c] on the panel path
  const bool panel_dw = need_col && M % 16 == 0 && N <= kPanelPlaneMax;
  const std::int64_t group = need_col ? dw_group(batch, threads) : 1;
  reserve_backward(threads, dx_direct, need_col, dx != nullptr, group);
  const conv_direct::Geometry in_g = plane_geometry();
  const conv_direct::Geometry out_g{M, in_g.h, in_g.w, k};  // dy's padded planes (stride 1)
  if (dx_direct) {
    w_input_grad_.resize(wsize);
    if (dx_planes)
      conv_direct::arrange_input_grad(w_, M, in_c, k, w_input_grad_.data());
    else
      conv_direct::arrange_input_grad_stride2(w_, M, in_c, w_input_grad_.data());
  }
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    float* dw_t = dw_part_[t].data();  // [out_c, rows] (GEMM path), then db [out_c]
    float* db_t = dw_t + wsize;
    PlaneWorkspace& ws = plane_ws_[t];
    if (dw_lanes_) std::fill(ws.lanes.data(), ws.lanes.data() + wsize * 16, 0.0f);
    bool first = true;
    const std::int64_t groups = (batch + group - 1) / group;
#pragma omp for schedule(static)
    for (std::int64_t grp = 0; grp < groups; ++grp) {
      const std::int64_t n0 = grp * group, count = std::min(group, batch - n0);
      if (panel_dw) {
        // dW^T [rows, out_c] (+)= [col_n0 ... col_n] [dy_n0 ... dy_n]^T: the columns and the
        // transposed output gradients side by side, one panel_gemm.
        const std::int64_t ld = count * N;
        float* col = col_[t].data();
        float* dyt = dy_group_[t].data();  // [ld, out_c]
        for (std::int64_t g = 0; g < count; ++g) {
          im2col(x + (n0 + g) * in_.size(), col + g * N, ld);
          const float* dyn = dy + (n0 + g) * out_.size();
          for (int o = 0; o < M; ++o)
            for (int q = 0; q < N; ++q) dyt[(g * N + q) * M + o] = dyn[o * N + q];
        }
        panel_gemm(K, M, static_cast<int>(ld), col, ld, 1, dyt, M, dw_t, M, !first);
      } else if (need_col) {  // dW (+)= [dy_n0 ... dy_n] [col_n0 ... col_n]^T in one GEMM
        const std::int64_t ld = count * N;
        float* col = col_[t].data();
        float* dy_side = count > 1 ? dy_group_[t].data() : nullptr;
        for (std::int64_t g = 0; g < count; ++g) {
          im2col(x + (n0 + g) * in_.size(), col + g * N, ld);
          const float* dyn = dy + (n0 + g) * out_.size();
          for (int o = 0; dy_side && o < M; ++o)
            std::copy_n(dyn + static_cast<std::ptrdiff_t>(o) * N, N, dy_side + o * ld + g * N);
        }
        sgemm(false, true, M, K, static_cast<int>(ld), 1.0f,
              dy_side ? dy_side : dy + n0 * out_.size(), static_cast<int>(ld), col,
              static_cast<int>(ld), first ? 0.0f : 1.0f, dw_t, K);
      }
      for (std::int64_t n = n0; n < n0 + count; ++n) {
        const float* xn = x + n * in_.size();
        const float* dyn = dy + n * out_.size();
        // Position q = i * row + j of dyq is output pixel (i, j); with stride 1, ws.dy holds
        // dy's padded planes, which the input gradient reads too.
        const BatchNormGradMap image_map =
            dy_map ? dy_map->advanced(n * out_.size()) : BatchNormGradMap{};
        const float* dyq =
            dw_lanes_ || dx_planes
                ? conv_direct::prepare_dy(dyn, in_g, M, ws.dy.data(), dy_map ? &image_map : nullptr)
                : nullptr;
        if (dw_lanes_) {
          conv_direct::pad_planes(xn, in_g, ws.x.data());
          conv_direct::weight_grad_lanes(dyq, M, ws.x.data(), in_g, ws.lanes.data());
        } else if (pointwise()) {
          sgemm(false, true, M, K, N, 1.0f, dyn, N, xn, N, first ? 0.0f : 1.0f, dw_t, K);
        }
        if (b_) add_bias_grad(dyn, first, db_t);
        first = false;
        if (!dx) continue;
        float* dxn = dx + n * in_.size();
        if (dx_planes) {
          conv_direct::forward(ws.dy.data(), out_g, w_input_grad_.data(), in_c, ws.out.data());
          conv_direct::unpad_planes(ws.out.data(), in_g, nullptr, dxn);
        } else if (dx_direct) {
          conv_direct::input_grad_stride2(dyn, in_g, M, w_input_grad_.data(), ws.out.data(), dxn);
        } else if (pointwise()) {
          sgemm(true, false, K, N, M, 1.0f, w_, K, dyn, N, 0.0f, dxn, N);
        } else {
          sgemm(true, false, K, N, M, 1.0f, w_, K, dyn, N, 0.0f, dcol_[t].data(), N);
          col2im(dcol_[t].data(), dxn);
        }
      }
    }
    if (first) std::fill(dw_t, dw_t + wsize + bsize, 0.0f);  // this thread got no images
  }
  // dW (+)= the threads' lanes or GEMM partials; db (+)= the threads' partials.
  if (dw_lanes_) {
    std::vector<const float*> lanes;
    for (int t = 0; t < threads; ++t)
      lanes.push_back(plane_ws_[static_cast<std::size_t>(t)].lanes.data());
    conv_direct::reduce_lanes(lanes.data(), threads, wsize, accumulate, dw_);
  }
  if (panel_dw) {
#pragma omp parallel for schedule(static) if (wsize > 65536)
    for (int o = 0; o < M; ++o) {
      for (int r = 0; r < K; ++r) {
        float sum = 0.0f;
        for (int t = 0; t < threads; ++t)
          sum += dw_part_[static_cast<std::size_t>(t)][static_cast<std::size_t>(r) * M + o];
        float& dst = dw_[static_cast<std::size_t>(o) * K + r];
        dst = accumulate ? dst + sum : sum;
      }
    }
  }
  add_up_partials(threads, dw_lanes_ || panel_dw ? wsize : 0, accumulate);
}

void Conv2d::backward_adding(const float* x, const float* dy, float* dx, const float* dx_addend,
                             std::int64_t batch, bool accumulate, const BatchNormGradMap* dy_map) {
  if (dy_map) {
    const bool addend_ok = !dx_addend || winograd_ || (subsampled_ && dx_addend == dx);
    if (!reads_mapped_gradient(dx != nullptr) || !addend_ok)
      throw std::logic_error("Conv2d::backward_adding: no dy map on this path");
    if (winograd_)
      return backward_winograd(x, dy, dx, batch, accumulate, dx_addend, nullptr, dy_map);
    if (subsampled_)
      return backward_subsampled(x, dy, dx, batch, accumulate, dx_addend != nullptr, dy_map);
    return backward_direct_or_im2col(x, dy, dx, batch, accumulate, dy_map);
  }
  if (!dx || !dx_addend) return backward(x, nullptr, dy, dx, batch, accumulate);
  if (winograd_) return backward_winograd(x, dy, dx, batch, accumulate, dx_addend);
  if (subsampled_ && dx_addend == dx)
    return backward_subsampled(x, dy, dx, batch, accumulate, true);
  const auto n = static_cast<std::size_t>(batch * in_.size());
  if (dx_scratch_.size() < n) dx_scratch_.resize(n);
  backward(x, nullptr, dy, dx_scratch_.data(), batch, accumulate);
  const float* g = dx_scratch_.data();
  parallel_chunks(static_cast<std::int64_t>(n), [&](std::int64_t begin, std::int64_t count) {
#pragma omp simd
    for (std::int64_t i = begin; i < begin + count; ++i) dx[i] = g[i] + dx_addend[i];
  });
}

void Conv2d::add_up_partials(int threads, std::size_t begin, bool accumulate) {
  const std::size_t wsize = static_cast<std::size_t>(out_.c * rows_), bsize = b_ ? out_.c : 0;
  const auto first = static_cast<std::int64_t>(begin);
  const auto total = static_cast<std::int64_t>(wsize + bsize);
#pragma omp parallel for simd schedule(static) if (total - first > 65536)
  for (std::int64_t i = first; i < total; ++i) {
    float s = 0.0f;
    for (int t = 0; t < threads; ++t)
      s += dw_part_[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
    float* dst = i < static_cast<std::int64_t>(wsize)
                     ? dw_ + i
                     : db_ + (i - static_cast<std::int64_t>(wsize));
    *dst = accumulate ? *dst + s : s;
  }
}

}  // namespace lbt::nn
