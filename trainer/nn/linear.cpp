// Linear layer; forward and backward are three GEMMs (llm.c matmul_forward/backward).
#include "trainer/nn/linear.hpp"

#include <cmath>
#include <random>

#include "core/gemm.hpp"
#include "core/tensor.hpp"

namespace lbt::nn {

Linear::Linear(std::int64_t in, std::int64_t out, InitScheme init)
    : in_(in), out_(out), init_(init) {}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_) + "->" + std::to_string(out_) + ")";
}

void Linear::register_params(ParameterStore& store, const std::string& prefix) {
  w_segment_ = store.add(prefix + ".weight", static_cast<std::size_t>(in_ * out_), ParamKind::kWeight);
  b_segment_ = store.add(prefix + ".bias", static_cast<std::size_t>(out_), ParamKind::kBias);
}

void Linear::bind(ParameterStore& store) {
  w_ = store.param_ptr(w_segment_);
  b_ = store.param_ptr(b_segment_);
  dw_ = store.grad_ptr(w_segment_);
  db_ = store.grad_ptr(b_segment_);
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
  std::fill(b_, b_ + out_, 0.0f);
}

void Linear::forward(const float* x, float* y, std::int64_t batch, bool) {
  const int B = static_cast<int>(batch), I = static_cast<int>(in_), O = static_cast<int>(out_);
  // y[B, O] = b (broadcast), then y += x[B, I] * W[O, I]^T
#pragma omp parallel for if (batch * out_ > 65536)
  for (int r = 0; r < B; ++r) std::copy(b_, b_ + O, y + static_cast<std::ptrdiff_t>(r) * O);
  sgemm(false, true, B, O, I, 1.0f, x, I, w_, I, 1.0f, y, O);
}

void Linear::backward(const float* x, const float*, const float* dy, float* dx,
                      std::int64_t batch, bool accumulate) {
  const int B = static_cast<int>(batch), I = static_cast<int>(in_), O = static_cast<int>(out_);
  // dW[O, I] (+)= dy[B, O]^T x[B, I]
  sgemm(true, false, O, I, B, 1.0f, dy, O, x, I, accumulate ? 1.0f : 0.0f, dw_, I);
  // db[O] (+)= sum over rows of dy (Eigen: the plain loop did not vectorise)
  Eigen::Map<Eigen::RowVectorXf> db(db_, O);
  const auto column_sums = ConstMatMap(dy, B, O).colwise().sum();
  if (accumulate) db += column_sums;
  else db = column_sums;
  // dx[B, I] = dy[B, O] W[O, I]
  if (dx) sgemm(false, false, B, I, O, 1.0f, dy, O, w_, I, 0.0f, dx, I);
}

}  // namespace lbt::nn
