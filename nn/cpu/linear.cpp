// Linear layer; forward and backward are three GEMMs (llm.c matmul_forward/backward): OpenBLAS's,
// or at small batches panel_gemm's, which read W where it lies.
#include "nn/cpu/linear.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/gemm.hpp"
#include "core/panel_gemm.hpp"
#include "core/tensor.hpp"
#include "nn/cpu/parallel_chunks.hpp"

namespace lbt::nn {

Linear::Linear(std::int64_t in, std::int64_t out, InitScheme init, bool bias)
    : in_(in), out_(out), init_(init), bias_(bias) {}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_) + "->" + std::to_string(out_) +
         (bias_ ? "" : ", no bias") + ")";
}

void Linear::register_params(ParameterStore& store, const std::string& prefix) {
  w_segment_ =
      store.add(prefix + ".weight", static_cast<std::size_t>(in_ * out_), ParamKind::kWeight);
  if (bias_)
    b_segment_ = store.add(prefix + ".bias", static_cast<std::size_t>(out_), ParamKind::kBias);
}

void Linear::bind(ParameterStore& store) {
  w_ = store.param_ptr(w_segment_);
  dw_ = store.grad_ptr(w_segment_);
  if (bias_) b_ = store.param_ptr(b_segment_), db_ = store.grad_ptr(b_segment_);
}

void Linear::init(Rng& rng) {
  // He et al. 2015 (ReLU nets): N(0, 2/fan_in); Glorot & Bengio 2010: U(+-sqrt(6/(in+out))).
  // Biases start at zero.
  const std::size_t n = static_cast<std::size_t>(in_ * out_);
  if (init_ == InitScheme::kHe) {
    std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(in_)));
    for (std::size_t i = 0; i < n; ++i) w_[i] = dist(rng);
  } else if (init_ == InitScheme::kGlorot) {
    float limit = std::sqrt(6.0f / static_cast<float>(in_ + out_));
    std::uniform_real_distribution<float> dist(-limit, limit);
    for (std::size_t i = 0; i < n; ++i) w_[i] = dist(rng);
  } else {
    std::fill(w_, w_ + n, 0.0f);
  }
  if (b_) std::fill(b_, b_ + out_, 0.0f);
}

namespace {

// Batches of at most this many rows multiply without OpenBLAS: its packing copies all of W for
// every product, which at small batches costs as much as the multiplies (the simple CNN's
// 3136 x 1024 layer spent half its time packing at batch 32). panel_gemm reads W in place.
constexpr std::int64_t kPanelBatchMax = 64;

}  // namespace

bool Linear::panel_path(std::int64_t batch) const {
  return batch <= kPanelBatchMax && in_ % 16 == 0 && out_ >= 32;
}

// Only the small-batch path has scratch: x^T and y^T, the batch padded to 16 columns.
std::int64_t Linear::workspace_bytes(std::int64_t batch, int) const {
  if (!panel_path(batch)) return 0;
  const std::int64_t b16 = (batch + 15) / 16 * 16;
  return aligned_buffer_bytes(in_ * b16) + aligned_buffer_bytes(out_ * b16);
}

void Linear::forward(const float* x, float* y, std::int64_t batch, bool) {
  if (panel_path(batch)) return forward_panel(x, y, batch);
  const int B = static_cast<int>(batch), I = static_cast<int>(in_), O = static_cast<int>(out_);
  // y[B, O] = b (broadcast), then y += x[B, I] * W[O, I]^T; without a bias y = x W^T (beta 0)
  if (b_) {
    split_ranges(batch, 1, batch * out_ >= kParallelElementsAbove,
                 [&](std::int64_t r0, std::int64_t r1) {
                   for (std::int64_t r = r0; r < r1; ++r) std::copy(b_, b_ + O, y + r * O);
                 });
  }
  sgemm(false, true, B, O, I, 1.0f, x, I, w_, I, b_ ? 1.0f : 0.0f, y, O);
}

void Linear::forward_panel(const float* x, float* y, std::int64_t batch) {
  // y^T [O, B16] = W [O, I] x^T [I, B16] with x^T's columns padded to 16 (zeros past batch).
  const std::int64_t B16 = (batch + 15) / 16 * 16;
  xt_.resize(static_cast<std::size_t>(in_ * B16));
  yt_.resize(static_cast<std::size_t>(out_ * B16));
  float* xt = xt_.data();
  float* yt = yt_.data();
  split_ranges(in_, 16, in_ * B16 >= kParallelElementsAbove, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t b = 0; b < B16; ++b)
      for (std::int64_t i = i0; i < i1; ++i) xt[i * B16 + b] = b < batch ? x[b * in_ + i] : 0.0f;
  });
  split_ranges(out_, 16, worth_splitting(out_, B16, in_), [&](std::int64_t o0, std::int64_t o1) {
    panel_gemm(static_cast<int>(o1 - o0), static_cast<int>(B16), static_cast<int>(in_),
               w_ + o0 * in_, in_, 1, xt, B16, yt + o0 * B16, B16, false);
    // The bias test sits outside the loops, so the with-bias loop is the one it always was.
    if (b_) {
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t o = o0; o < o1; ++o) y[b * out_ + o] = yt[o * B16 + b] + b_[o];
    } else {
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t o = o0; o < o1; ++o) y[b * out_ + o] = yt[o * B16 + b];
    }
  });
}

void Linear::backward(const float* x, const float*, const float* dy, float* dx, std::int64_t batch,
                      bool accumulate) {
  const int B = static_cast<int>(batch), I = static_cast<int>(in_), O = static_cast<int>(out_);
  const bool panel = panel_path(batch);
  // dW[O, I] (+)= dy[B, O]^T x[B, I]
  if (panel) {
    split_ranges(out_, 1, worth_splitting(O, I, B), [&](std::int64_t o0, std::int64_t o1) {
      panel_gemm(static_cast<int>(o1 - o0), I, B, dy + o0, 1, O, x, I, dw_ + o0 * in_, I,
                 accumulate);
    });
  } else {
    sgemm(true, false, O, I, B, 1.0f, dy, O, x, I, accumulate ? 1.0f : 0.0f, dw_, I);
  }
  // db[O] (+)= sum over rows of dy (Eigen: the plain loop did not vectorise)
  if (db_) {
    Eigen::Map<Eigen::RowVectorXf> db(db_, O);
    const auto column_sums = ConstMatMap(dy, B, O).colwise().sum();
    if (accumulate)
      db += column_sums;
    else
      db = column_sums;
  }
  // dx[B, I] = dy[B, O] W[O, I]
  if (!dx) return;
  if (panel) {
    split_ranges(in_, 32, worth_splitting(B, I, O), [&](std::int64_t i0, std::int64_t i1) {
      panel_gemm(B, static_cast<int>(i1 - i0), O, dy, O, 1, w_ + i0, I, dx + i0, I, false);
    });
  } else {
    sgemm(false, false, B, I, O, 1.0f, dy, O, w_, I, 0.0f, dx, I);
  }
}

}  // namespace lbt::nn
