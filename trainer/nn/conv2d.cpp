// Conv2d; see conv2d.hpp. Per image n (threads split the batch):
//   forward:  col = im2col(x_n);  y_n[out_c, HWo] = W[out_c, rows] col[rows, HWo] (+ b)
//   backward: dW[out_c, rows] += dy_n[out_c, HWo] col^T;  db += row sums of dy_n
//             dcol[rows, HWo] = W^T dy_n;  dx_n = col2im(dcol)
// The column matrix is recomputed in backward rather than stored: storing it would cost
// batch x rows x HWo floats (300 MB for the simple CNN at batch 512) for a cheap copy.
#include "trainer/nn/conv2d.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.hpp"
#include "core/gemm.hpp"

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
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(in_.c) + "->" + std::to_string(opt_.out_channels) + ", k" +
         std::to_string(opt_.kernel) + " s" + std::to_string(opt_.stride) + " p" +
         std::to_string(opt_.padding) + (opt_.bias ? "" : ", no bias") + ")";
}

void Conv2d::register_params(ParameterStore& store, const std::string& prefix) {
  w_segment_ = store.add(prefix + ".weight", static_cast<std::size_t>(out_.c * rows_), ParamKind::kWeight);
  if (opt_.bias) b_segment_ = store.add(prefix + ".bias", static_cast<std::size_t>(out_.c), ParamKind::kBias);
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
  const std::int64_t S = opt_.stride, first = opt_.padding - kj, last = in_.w - 1 + opt_.padding - kj;
  lo = first <= 0 ? 0 : std::min(out_.w, (first + S - 1) / S);
  hi = last < 0 ? lo : std::max(lo, std::min(out_.w, last / S + 1));
}

bool Conv2d::direct() const { return opt_.kernel == 1 && opt_.stride == 1 && opt_.padding == 0; }

float* Conv2d::workspace(int thread, std::size_t size) {
  // Sized on first use and reused: no allocation (and no page faults) in later steps.
  AlignedBuffer& b = col_[static_cast<std::size_t>(thread)];
  if (b.size() < size) b.resize(size);
  return b.data();
}

void Conv2d::im2col(const float* x, float* col) const {
  const std::int64_t K = opt_.kernel, S = opt_.stride, P = opt_.padding;
  const std::int64_t Ho = out_.h, Wo = out_.w, H = in_.h, W = in_.w;
  for (std::int64_t c = 0; c < in_.c; ++c) {
    const float* plane = x + c * H * W;
    for (std::int64_t ki = 0; ki < K; ++ki) {
      for (std::int64_t kj = 0; kj < K; ++kj) {
        float* row = col + ((c * K + ki) * K + kj) * Ho * Wo;
        std::int64_t ow_lo, ow_hi;
        valid_columns(kj, ow_lo, ow_hi);
        for (std::int64_t oh = 0; oh < Ho; ++oh) {
          float* out = row + oh * Wo;
          const std::int64_t ih = oh * S - P + ki;
          if (ih < 0 || ih >= H) {
            std::fill(out, out + Wo, 0.0f);
            continue;
          }
          const float* in = plane + ih * W - P + kj;
          std::fill(out, out + ow_lo, 0.0f);
          if (S == 1) {
            std::memcpy(out + ow_lo, in + ow_lo, static_cast<std::size_t>(ow_hi - ow_lo) * sizeof(float));
          } else {
            for (std::int64_t ow = ow_lo; ow < ow_hi; ++ow) out[ow] = in[ow * S];
          }
          std::fill(out + ow_hi, out + Wo, 0.0f);
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

void Conv2d::forward(const float* x, float* y, std::int64_t batch, bool) {
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), batch));
  if (col_.size() < static_cast<std::size_t>(threads)) col_.resize(static_cast<std::size_t>(threads));
  const int M = static_cast<int>(out_.c), N = static_cast<int>(out_.plane()), K = static_cast<int>(rows_);
  const std::size_t col_size = static_cast<std::size_t>(rows_ * out_.plane());
  if (!direct()) {
    for (int t = 0; t < threads; ++t) workspace(t, col_size);
  }
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* xn = x + n * in_.size();
    float* yn = y + n * out_.size();
    const float* col = xn;
    if (!direct()) {
      float* ws = col_[static_cast<std::size_t>(omp_get_thread_num())].data();
      im2col(xn, ws);
      col = ws;
    }
    if (b_) {
      for (int o = 0; o < M; ++o) std::fill(yn + static_cast<std::ptrdiff_t>(o) * N, yn + static_cast<std::ptrdiff_t>(o + 1) * N, b_[o]);
    }
    sgemm(false, false, M, N, K, 1.0f, w_, K, col, N, b_ ? 1.0f : 0.0f, yn, N);
  }
}

void Conv2d::backward(const float* x, const float*, const float* dy, float* dx,
                      std::int64_t batch, bool accumulate) {
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), batch));
  const int M = static_cast<int>(out_.c), N = static_cast<int>(out_.plane()), K = static_cast<int>(rows_);
  const std::size_t col_size = static_cast<std::size_t>(rows_ * out_.plane());
  const std::size_t wsize = static_cast<std::size_t>(M) * K, bsize = b_ ? static_cast<std::size_t>(M) : 0;
  if (col_.size() < static_cast<std::size_t>(threads)) col_.resize(static_cast<std::size_t>(threads));
  if (dcol_.size() < static_cast<std::size_t>(threads)) dcol_.resize(static_cast<std::size_t>(threads));
  if (dw_part_.size() < static_cast<std::size_t>(threads)) dw_part_.resize(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    if (!direct()) workspace(t, col_size);
    if (dx && !direct() && dcol_[t].size() < col_size) dcol_[t].resize(col_size);
    if (dw_part_[t].size() < wsize + bsize) dw_part_[t].resize(wsize + bsize);
  }
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int t = omp_get_thread_num();
    // Thread t's share of dW and db: [out_c, rows] then [out_c], reduced after the loop.
    float* dw_t = dw_part_[static_cast<std::size_t>(t)].data();
    float* db_t = dw_t + wsize;
    bool first = true;
#pragma omp for schedule(static)
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* xn = x + n * in_.size();
      const float* dyn = dy + n * out_.size();
      const float* col = xn;
      if (!direct()) {
        float* ws = col_[static_cast<std::size_t>(t)].data();
        im2col(xn, ws);
        col = ws;
      }
      sgemm(false, true, M, K, N, 1.0f, dyn, N, col, N, first ? 0.0f : 1.0f, dw_t, K);
      if (b_) {
        for (int o = 0; o < M; ++o) {
          const float* g = dyn + static_cast<std::ptrdiff_t>(o) * N;
          float s = 0.0f;
#pragma omp simd reduction(+ : s)
          for (int i = 0; i < N; ++i) s += g[i];
          db_t[o] = first ? s : db_t[o] + s;
        }
      }
      first = false;
      if (dx) {
        float* dxn = dx + n * in_.size();
        if (direct()) {
          sgemm(true, false, K, N, M, 1.0f, w_, K, dyn, N, 0.0f, dxn, N);
        } else {
          float* dcol = dcol_[static_cast<std::size_t>(t)].data();
          sgemm(true, false, K, N, M, 1.0f, w_, K, dyn, N, 0.0f, dcol, N);
          col2im(dcol, dxn);
        }
      }
    }
    if (first) std::fill(dw_t, dw_t + wsize + bsize, 0.0f);  // this thread got no images
  }
  // dW (+)= sum over threads of their shares.
  const std::int64_t total = static_cast<std::int64_t>(wsize + bsize);
#pragma omp parallel for simd schedule(static) if (total > 65536)
  for (std::int64_t i = 0; i < total; ++i) {
    float s = 0.0f;
    for (int t = 0; t < threads; ++t) s += dw_part_[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
    float* dst = i < static_cast<std::int64_t>(wsize) ? dw_ + i : db_ + (i - static_cast<std::int64_t>(wsize));
    *dst = accumulate ? *dst + s : s;
  }
}

}  // namespace lbt::nn
