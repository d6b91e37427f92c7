// ReLU; see relu.hpp.
#include "trainer/nn/relu.hpp"

namespace lbt::nn {

void Relu::forward(const float* x, float* y, std::int64_t batch, bool) {
  const std::int64_t n = batch * features_;
#pragma omp parallel for simd if (n > 262144)
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void Relu::backward(const float*, const float* y, const float* dy, float* dx,
                    std::int64_t batch) {
  if (!dx) return;
  const std::int64_t n = batch * features_;
#pragma omp parallel for simd if (n > 262144)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace lbt::nn
