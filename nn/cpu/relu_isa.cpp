// ReLU's loops, compiled once per ISA (cmake/isa_sources.cmake); see relu.cpp. Explicit vectors
// (core/vec16.hpp): GCC compiled the plain loops (a ternary, or std::max) to scalar code, and
// Eigen's select to scalar code for the baseline (9% of a batch-128 MLP step, perf).
#include <cstdint>

#include "core/vec16.hpp"

namespace lbt::nn::relu::LBT_ISA_NS {

// std::max(x, 0) lane by lane: x unless x < 0, so a NaN passes through (as Eigen's max did) and
// the divergence checks downstream still see it.
void forward(const float* x, float* y, std::int64_t n) {
  using namespace vec;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const v16 v = load(x + i);
    store(y + i, as_float(as_int(v) & ~(v < 0.0f)));
  }
  for (; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// dy where y > 0, else +0: the bits of dy and-ed with the comparison's mask.
void backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  using namespace vec;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) store(dx + i, as_float(as_int(load(dy + i)) & (load(y + i) > 0.0f)));
  for (; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace lbt::nn::relu::LBT_ISA_NS
