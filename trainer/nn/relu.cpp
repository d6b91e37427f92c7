// ReLU; see relu.hpp. Eigen array expressions, which use explicit SIMD: GCC compiled the plain
// loops (a ternary, or std::max) to scalar, mispredicting branches costing 11% of a batch-128
// MLP step. Split across threads only when large enough to pay for the fork.
#include "trainer/nn/relu.hpp"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>

namespace lbt::nn {
namespace {

constexpr std::int64_t kParallelAbove = 1 << 18;

void relu_forward(const float* x, float* y, std::int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(y, n) = Eigen::Map<const Eigen::ArrayXf>(x, n).max(0.0f);
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  Eigen::Map<const Eigen::ArrayXf> out(y, n), grad(dy, n);
  Eigen::Map<Eigen::ArrayXf>(dx, n) = (out > 0.0f).select(grad, 0.0f);
}

template <class F>
void chunked(std::int64_t n, F&& f) {
  if (n < kParallelAbove) return f(0, n);
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads / 16 * 16 + 16;
    const std::int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    f(begin, end - begin);
  }
}

}  // namespace

void Relu::forward(const float* x, float* y, std::int64_t batch, bool) {
  chunked(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu_forward(x + begin, y + begin, n);
  });
}

void Relu::backward(const float*, const float* y, const float* dy, float* dx,
                    std::int64_t batch, bool) {
  if (!dx) return;
  chunked(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu_backward(y + begin, dy + begin, dx + begin, n);
  });
}

}  // namespace lbt::nn
