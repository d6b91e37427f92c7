// The fused optimizer loops on the CPU path in use; the copies are in fused_loops_isa.cpp.
#include "optim/fused_loops.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt::optim::loops {

#define LBT_DECLARE(NS)                                                                            \
  namespace NS {                                                                                   \
  void sgd_plain(float* w, const float* g, std::size_t n, float scale, float l2, float lr);        \
  void sgd_momentum(float* w, float* buf, const float* g, std::size_t n, float scale, float l2,    \
                    const rules::SgdCoefficients& k);                                              \
  void adam(float* w, float* m, float* v, const float* g, std::size_t n, float scale, float l2,    \
            float wd, float lr, const rules::AdamCoefficients& k);                                 \
  std::array<double, 3> weight_and_grad_norms(const float* w, const float* g, std::size_t n,       \
                                              double beta);                                        \
  void lars_plain(float* w, const float* g, std::size_t n, float beta, float a, float c);          \
  void lars_momentum(float* w, float* v, const float* g, std::size_t n, float beta, float a,       \
                     float c, float one_minus_mu);                                                 \
  std::array<double, 2> lamb_moments_and_norms(const float* w, float* m, float* v, const float* g, \
                                               std::size_t n, float lambda,                        \
                                               const rules::AdamCoefficients& k);                  \
  void lamb_update(float* w, const float* m, const float* v, std::size_t n, float lambda,          \
                   float size, const rules::AdamCoefficients& k);                                  \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

void sgd_plain(float* w, const float* g, std::size_t n, float scale, float l2, float lr) {
  LBT_CPU_DISPATCH(sgd_plain, w, g, n, scale, l2, lr);
}

void sgd_momentum(float* w, float* buf, const float* g, std::size_t n, float scale, float l2,
                  const rules::SgdCoefficients& k) {
  LBT_CPU_DISPATCH(sgd_momentum, w, buf, g, n, scale, l2, k);
}

void adam(float* w, float* m, float* v, const float* g, std::size_t n, float scale, float l2,
          float wd, float lr, const rules::AdamCoefficients& k) {
  LBT_CPU_DISPATCH(adam, w, m, v, g, n, scale, l2, wd, lr, k);
}

std::array<double, 3> weight_and_grad_norms(const float* w, const float* g, std::size_t n,
                                            double beta) {
  LBT_CPU_DISPATCH(weight_and_grad_norms, w, g, n, beta);
}

void lars_plain(float* w, const float* g, std::size_t n, float beta, float a, float c) {
  LBT_CPU_DISPATCH(lars_plain, w, g, n, beta, a, c);
}

void lars_momentum(float* w, float* v, const float* g, std::size_t n, float beta, float a, float c,
                   float one_minus_mu) {
  LBT_CPU_DISPATCH(lars_momentum, w, v, g, n, beta, a, c, one_minus_mu);
}

std::array<double, 2> lamb_moments_and_norms(const float* w, float* m, float* v, const float* g,
                                             std::size_t n, float lambda,
                                             const rules::AdamCoefficients& k) {
  LBT_CPU_DISPATCH(lamb_moments_and_norms, w, m, v, g, n, lambda, k);
}

void lamb_update(float* w, const float* m, const float* v, std::size_t n, float lambda, float size,
                 const rules::AdamCoefficients& k) {
  LBT_CPU_DISPATCH(lamb_update, w, m, v, n, lambda, size, k);
}

}  // namespace lbt::optim::loops
