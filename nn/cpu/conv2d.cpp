// Conv2d; see conv2d.hpp. Forward per image n (threads split the batch): the direct kernel
// over x_n's padded planes, or col = im2col(x_n); y_n[out_c, HWo] = W[out_c, rows] col (+ b).
// The backward is in conv2d_backward.cpp.
#include "nn/cpu/conv2d.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/vec16.hpp"
#include "nn/cpu/conv_direct.hpp"
#include "nn/cpu/short_rows.hpp"

namespace lbt::nn {

Conv2d::Conv2d(Shape3 in, Conv2dOptions options, InitScheme init)
    : in_(in), opt_(options), init_(init) {
  out_ = {opt_.out_channels, window_out(in.h, opt_.kernel, opt_.stride, opt_.padding),
          window_out(in.w, opt_.kernel, opt_.stride, opt_.padding)};
  if (in.c <= 0 || opt_.out_channels <= 0 || opt_.kernel <= 0 || opt_.stride <= 0 ||
      opt_.padding < 0 || out_.h <= 0 || out_.w <= 0) {
    throw ConfigError(describe() + " does not fit its input " + in.text(),
                      "the image must be at least kernel - 2 x padding pixels on each side");
  }
  rows_ = in_.c * opt_.kernel * opt_.kernel;
  planes_ =
      opt_.allow_direct &&
      conv_direct::supports(static_cast<int>(opt_.kernel), static_cast<int>(opt_.stride),
                            static_cast<int>(opt_.padding), static_cast<int>(opt_.out_channels),
                            static_cast<int>(in_.h), static_cast<int>(in_.w));
  winograd_ = opt_.allow_direct && opt_.allow_winograd &&
              winograd::supports(static_cast<int>(opt_.kernel), static_cast<int>(opt_.stride),
                                 static_cast<int>(opt_.padding), static_cast<int>(in_.c),
                                 static_cast<int>(opt_.out_channels), static_cast<int>(in_.h),
                                 static_cast<int>(in_.w));
  subsampled_ = subsampled_pointwise();
  dw_lanes_ = planes_ && opt_.kernel == 3 && out_.h * out_.w >= 256 && out_.c * rows_ <= 16384;
  // oneDNN's kernels beat the direct one on 3x3 stride-2 convolutions on AVX2 (1.18-1.36x a
  // training pass of ResNet-8's two, reorders included; its step 1.04-1.11x). On AVX-512 the
  // step measured 0.98-1.06x, so lbt's kernel stays there (bench/cpu_paths.md).
  if (opt_.allow_direct && opt_.allow_library && !opt_.bias && opt_.kernel == 3 &&
      opt_.stride == 2 && opt_.padding == 1 && OnednnConv::takes_strided_3x3()) {
    onednn_ = std::make_unique<OnednnConv>(in_, out_, opt_.kernel, opt_.stride, opt_.padding);
    planes_ = winograd_ = subsampled_ = dw_lanes_ = false;
  }
}

const char* Conv2d::path_name() const {
  if (onednn_) return "oneDNN";
  if (winograd_) return "winograd";
  if (planes_) return dw_lanes_ ? "direct (dW lanes)" : "direct (dW im2col)";
  return subsampled_ ? "1x1 subsampled" : "im2col";
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(in_.c) + "->" + std::to_string(opt_.out_channels) + ", k" +
         std::to_string(opt_.kernel) + " s" + std::to_string(opt_.stride) + " p" +
         std::to_string(opt_.padding) + (opt_.bias ? "" : ", no bias") + ")";
}

void Conv2d::register_params(ParameterStore& store, const std::string& prefix) {
  w_segment_ =
      store.add(prefix + ".weight", static_cast<std::size_t>(out_.c * rows_), ParamKind::kWeight);
  if (opt_.bias)
    b_segment_ = store.add(prefix + ".bias", static_cast<std::size_t>(out_.c), ParamKind::kBias);
}

void Conv2d::bind(ParameterStore& store) {
  w_ = store.param_ptr(w_segment_);
  dw_ = store.grad_ptr(w_segment_);
  if (opt_.bias) b_ = store.param_ptr(b_segment_), db_ = store.grad_ptr(b_segment_);
}

void Conv2d::init(Rng& rng) {
  // He et al. 2015: N(0, 2 / fan_in); Glorot & Bengio 2010: U(+-sqrt(6 / (fan_in + fan_out))),
  // fan_in = in_c k^2, fan_out = out_c k^2. Biases start at zero.
  const std::size_t n = static_cast<std::size_t>(out_.c * rows_);
  const float fan_in = static_cast<float>(rows_);
  const float fan_out = static_cast<float>(out_.c * opt_.kernel * opt_.kernel);
  if (init_ == InitScheme::kHe) {
    std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / fan_in));
    for (std::size_t i = 0; i < n; ++i) w_[i] = dist(rng);
  } else if (init_ == InitScheme::kGlorot) {
    const float limit = std::sqrt(6.0f / (fan_in + fan_out));
    std::uniform_real_distribution<float> dist(-limit, limit);
    for (std::size_t i = 0; i < n; ++i) w_[i] = dist(rng);
  } else {
    std::fill(w_, w_ + n, 0.0f);
  }
  if (b_) std::fill(b_, b_ + out_.c, 0.0f);
}

void Conv2d::valid_columns(std::int64_t kj, std::int64_t& lo, std::int64_t& hi) const {
  // Output columns ow whose input column ow*S - P + kj lies inside [0, W): [lo, hi).
  const std::int64_t S = opt_.stride, first = opt_.padding - kj,
                     last = in_.w - 1 + opt_.padding - kj;
  lo = first <= 0 ? 0 : std::min(out_.w, (first + S - 1) / S);
  hi = last < 0 ? lo : std::max(lo, std::min(out_.w, last / S + 1));
}

bool Conv2d::pointwise() const {
  return opt_.kernel == 1 && opt_.stride == 1 && opt_.padding == 0;
}

float* Conv2d::workspace(int thread, std::size_t size) {
  // Sized on first use and reused: no allocation (and no page faults) in later steps.
  AlignedBuffer& b = col_[static_cast<std::size_t>(thread)];
  if (b.size() < size) b.resize(size);
  return b.data();
}

namespace {
// Largest zero-bordered plane im2col's stride-1 path keeps on the stack (34x34: 32x32 "same").
constexpr std::int64_t kIm2colPaddedMax = 34 * 34;
}  // namespace

LBT_NO_LIBCALL_LOOPS void Conv2d::im2col(const float* x, float* col, std::int64_t ld) const {
  const std::int64_t K = opt_.kernel, S = opt_.stride, P = opt_.padding;
  const std::int64_t Ho = out_.h, Wo = out_.w, H = in_.h, W = in_.w;
  if (ld == 0) ld = Ho * Wo;
  const std::int64_t Hp = H + 2 * P, Wp = W + 2 * P;
  if (Hp * Wp <= kIm2colPaddedMax) {
    // Small planes (ResNet's 16x16 and 8x8 stages): each channel once into a zero-bordered
    // plane, then every row of the column matrix is Ho rows of Wo floats read at stride S,
    // with no per-row bounds.
    alignas(64) float padded[kIm2colPaddedMax];
    zero_row(padded, Hp * Wp);  // the border stays zero: only the interior is rewritten
    for (std::int64_t c = 0; c < in_.c; ++c) {
      for (std::int64_t h = 0; h < H; ++h)
        copy_row(padded + (h + P) * Wp + P, x + (c * H + h) * W, W);
      for (std::int64_t ki = 0; ki < K; ++ki) {
        for (std::int64_t kj = 0; kj < K; ++kj) {
          float* row = col + ((c * K + ki) * K + kj) * ld;
          const float* src = padded + ki * Wp + kj;
          if (S == 1 && Wo == 8) {
            for (std::int64_t oh = 0; oh < Ho; ++oh) copy_row(row + oh * 8, src + oh * Wp, 8);
          } else if (S == 1) {
            for (std::int64_t oh = 0; oh < Ho; ++oh) copy_row(row + oh * Wo, src + oh * Wp, Wo);
          } else if (S == 2 && Wo == 8 && (K - 1 + 2 * Ho) * Wp + K + 16 <= kIm2colPaddedMax) {
            // Every other float of a 16-float run (its last float, read past the window, is
            // dropped; the bound keeps that read inside `padded`): a shuffle where the strided
            // loop compiled to a gather.
            for (std::int64_t oh = 0; oh < Ho; ++oh) {
              const vec::v16 v = vec::load(src + oh * S * Wp);
              const vec::v16 even = vec::even_of(v, v);
              std::memcpy(row + oh * Wo, &even, 8 * sizeof(float));
            }
          } else {
            for (std::int64_t oh = 0; oh < Ho; ++oh) {
              const float* in = src + oh * S * Wp;
              float* out = row + oh * Wo;
#pragma omp simd
              for (std::int64_t ow = 0; ow < Wo; ++ow) out[ow] = in[ow * S];
            }
          }
        }
      }
    }
    return;
  }
  for (std::int64_t c = 0; c < in_.c; ++c) {
    const float* plane = x + c * H * W;
    for (std::int64_t ki = 0; ki < K; ++ki) {
      for (std::int64_t kj = 0; kj < K; ++kj) {
        float* row = col + ((c * K + ki) * K + kj) * ld;
        std::int64_t ow_lo, ow_hi;
        valid_columns(kj, ow_lo, ow_hi);
        for (std::int64_t oh = 0; oh < Ho; ++oh) {
          float* out = row + oh * Wo;
          const std::int64_t ih = oh * S - P + ki;
          if (ih < 0 || ih >= H) {
            zero_row(out, Wo);
            continue;
          }
          const float* in = plane + ih * W - P + kj;
          zero_row(out, ow_lo);
          if (S == 1) {
            copy_row(out + ow_lo, in + ow_lo, ow_hi - ow_lo);
          } else {
            for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow] = in[ow * S];
          }
          zero_row(out + ow_hi, Wo - ow_hi);
        }
      }
    }
  }
}

void Conv2d::col2im(const float* dcol, float* dx) const {
  const std::int64_t K = opt_.kernel, S = opt_.stride, P = opt_.padding;
  const std::int64_t Ho = out_.h, Wo = out_.w, H = in_.h, W = in_.w;
  std::fill(dx, dx + in_.size(), 0.0f);
  for (std::int64_t c = 0; c < in_.c; ++c) {
    float* plane = dx + c * H * W;
    for (std::int64_t ki = 0; ki < K; ++ki) {
      for (std::int64_t kj = 0; kj < K; ++kj) {
        const float* row = dcol + ((c * K + ki) * K + kj) * Ho * Wo;
        std::int64_t ow_lo, ow_hi;
        valid_columns(kj, ow_lo, ow_hi);
        for (std::int64_t oh = 0; oh < Ho; ++oh) {
          const std::int64_t ih = oh * S - P + ki;
          if (ih < 0 || ih >= H) continue;
          const float* g = row + oh * Wo;
          float* out = plane + ih * W - P + kj;
          if (S == 1) {
#pragma omp simd
            for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow] += g[ow];
          } else {
            for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow * S] += g[ow];
          }
        }
      }
    }
  }
}

conv_direct::Geometry Conv2d::plane_geometry() const {
  return {static_cast<int>(in_.c), static_cast<int>(in_.h), static_cast<int>(in_.w),
          static_cast<int>(opt_.kernel), static_cast<int>(opt_.stride)};
}

int Conv2d::threads_for(std::int64_t batch) const {
  return omp_in_parallel() ? 1
                           : static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), batch));
}

void Conv2d::forward(const float* x, float* y, std::int64_t batch, bool) {
  if (onednn_) return onednn_->forward(x, w_, y, batch);
  if (winograd_) return forward_winograd(x, y, batch);
  if (planes_) return forward_planes(x, y, batch);
  if (subsampled_) return forward_subsampled(x, y, batch);
  const int threads = threads_for(batch);
  if (col_.size() < static_cast<std::size_t>(threads))
    col_.resize(static_cast<std::size_t>(threads));
  const int M = static_cast<int>(out_.c), N = static_cast<int>(out_.plane()),
            K = static_cast<int>(rows_);
  const std::size_t col_size = static_cast<std::size_t>(rows_ * out_.plane());
  if (!pointwise()) {
    for (int t = 0; t < threads; ++t) workspace(t, col_size);
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* xn = x + n * in_.size();
    float* yn = y + n * out_.size();
    const float* col = xn;
    if (!pointwise()) {
      float* ws = col_[static_cast<std::size_t>(omp_get_thread_num())].data();
      im2col(xn, ws);
      col = ws;
    }
    if (b_) {
      for (int o = 0; o < M; ++o)
        std::fill(yn + static_cast<std::ptrdiff_t>(o) * N,
                  yn + static_cast<std::ptrdiff_t>(o + 1) * N, b_[o]);
    }
    sgemm(false, false, M, N, K, 1.0f, w_, K, col, N, b_ ? 1.0f : 0.0f, yn, N);
  }
}

void Conv2d::forward_planes(const float* x, float* y, std::int64_t batch, float* y_moments) {
  const int threads = threads_for(batch);
  const conv_direct::Geometry in_g = plane_geometry();
  conv_direct::Geometry out_g = in_g;
  out_g.channels = static_cast<int>(out_.c);
  w_forward_.resize(static_cast<std::size_t>(out_.c * rows_));
  conv_direct::arrange_forward(w_, out_g.channels, in_g.channels, in_g.k, w_forward_.data());
  if (plane_ws_.size() < static_cast<std::size_t>(threads))
    plane_ws_.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    PlaneWorkspace& ws = plane_ws_[static_cast<std::size_t>(t)];
    if (ws.x.size() < in_g.channels * in_g.channel_stride())
      ws.x.resize(in_g.channels * in_g.channel_stride());
    if (ws.out.size() < out_g.channels * out_g.out_len())
      ws.out.resize(out_g.channels * out_g.out_len());
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t n = 0; n < batch; ++n) {
    PlaneWorkspace& ws = plane_ws_[static_cast<std::size_t>(omp_get_thread_num())];
    conv_direct::pad_planes(x + n * in_.size(), in_g, ws.x.data());
    conv_direct::forward(ws.x.data(), in_g, w_forward_.data(), out_g.channels, ws.out.data());
    conv_direct::unpad_planes(ws.out.data(), out_g, b_, y + n * out_.size(),
                              y_moments ? y_moments + n * 3 * out_.c : nullptr);
  }
}

}  // namespace lbt::nn
