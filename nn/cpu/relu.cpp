// ReLU; see relu.hpp. Eigen array expressions, which use explicit SIMD: GCC compiled the plain
// loops (a ternary, or std::max) to scalar, mispredicting branches costing 11% of a batch-128
// MLP step. Split across threads only when large enough to pay for the fork.
#include "nn/cpu/relu.hpp"

#include <Eigen/Core>

#include "nn/cpu/parallel_chunks.hpp"

namespace lbt::nn {
namespace {

void relu_forward(const float* x, float* y, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(y, n) = Eigen::Map<const Eigen::ArrayXf>(x, n).max(0.0f);
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  Eigen::Map<const Eigen::ArrayXf> out(y, n), grad(dy, n);
  Eigen::Map<Eigen::ArrayXf>(dx, n) = (out > 0.0f).select(grad, 0.0f);
}

}  // namespace

void Relu::forward(const float* x, float* y, std::int64_t batch, bool) {
  parallel_chunks(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu_forward(x + begin, y + begin, n);
  });
}

void Relu::backward(const float*, const float* y, const float* dy, float* dx, std::int64_t batch,
                    bool) {
  if (!dx) return;
  parallel_chunks(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu_backward(y + begin, dy + begin, dx + begin, n);
  });
}

}  // namespace lbt::nn
