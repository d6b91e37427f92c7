// ReLU; see relu.hpp. The loops are in relu_isa.cpp, one copy per ISA; split across threads
// only when large enough to pay for the fork.
#include "nn/cpu/relu.hpp"

#include "core/cpu_dispatch.hpp"
#include "nn/cpu/parallel_chunks.hpp"

namespace lbt::nn {
namespace relu {

#define LBT_DECLARE(NS)                                                      \
  namespace NS {                                                             \
  void forward(const float* x, float* y, std::int64_t n);                    \
  void backward(const float* y, const float* dy, float* dx, std::int64_t n); \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

void forward(const float* x, float* y, std::int64_t n) {
  LBT_CPU_DISPATCH(forward, x, y, n);
}

void backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  LBT_CPU_DISPATCH(backward, y, dy, dx, n);
}

}  // namespace relu

void Relu::forward(const float* x, float* y, std::int64_t batch, bool) {
  parallel_chunks(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu::forward(x + begin, y + begin, n);
  });
}

void Relu::backward(const float*, const float* y, const float* dy, float* dx, std::int64_t batch,
                    bool) {
  if (!dx) return;
  parallel_chunks(batch * features_, [&](std::int64_t begin, std::int64_t n) {
    relu::backward(y + begin, dy + begin, dx + begin, n);
  });
}

}  // namespace lbt::nn
