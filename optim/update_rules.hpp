// The per-element update of every optimizer, written once for both backends: the CPU's fused
// loops (fused_loops_isa.cpp, once per CPU path, under `#pragma omp simd`) and the CUDA kernels
// (optim/cuda/) call these, so the golden tests against torch.optim cover the GPU's arithmetic.
// Per-segment scalars (learning rate, trust ratios, bias corrections) are computed on the host
// in double and arrive here rounded once to float. Neither compiler may contract a product and a
// sum into a fused multiply-add: nvcc runs with --fmad=false and lbt_optim with
// -ffp-contract=off (optim/CMakeLists.txt), so every backend and CPU path rounds each operation
// as written and the results agree bit for bit.
#pragma once
#include "core/host_device.hpp"

namespace lbt::optim::rules {

// g' = scale * (g + l2 * w): coupled weight decay, and LARC's rescaled gradient (optimizer.hpp).
LBT_HOST_DEVICE inline float transformed_grad(float g, float w, float scale, float l2) {
  return scale * (g + l2 * w);
}

// ---- SGD, momentum, Nesterov (torch.optim.SGD) ----
struct SgdCoefficients {
  float lr;
  float mu;                   // momentum
  float one_minus_mu;         // 1 - mu rounded once from double (sgd.cpp says why)
  float one_minus_dampening;  // 1 - dampening, likewise
  bool first;                 // step 0: buf = g'
  bool nesterov;
};

LBT_HOST_DEVICE inline void sgd_plain(float& w, float g_prime, float lr) {
  w -= lr * g_prime;
}

// buf = mu buf + (1 - dampening) g' (written buf - (1 - mu) buf + ...), then w -= lr d with
// d = buf, or g' + mu buf looking ahead (Nesterov).
LBT_HOST_DEVICE inline void sgd_momentum(float& w, float& buf, float g_prime,
                                         const SgdCoefficients& k) {
  const float b = k.first ? g_prime : buf - k.one_minus_mu * buf + k.one_minus_dampening * g_prime;
  buf = b;
  const float d = k.nesterov ? g_prime + k.mu * b : b;
  w -= k.lr * d;
}

// ---- Adam, AdamW, and LAMB's direction (Kingma & Ba 2015 Alg. 1; You et al. 2019 Alg. 2) ----
struct AdamCoefficients {
  float one_minus_beta1, one_minus_beta2;  // rounded once from double (adam.cpp says why)
  float inv_bc1, inv_bc2;                  // 1 / (1 - beta^t), or 1 without bias correction
  float eps_in, eps_out;                   // sqrt(v_hat + eps_in) + eps_out
};

// m = beta1 m + (1 - beta1) g', v = beta2 v + (1 - beta2) g'^2.
LBT_HOST_DEVICE inline void adam_moments(float& m, float& v, float g_prime,
                                         const AdamCoefficients& k) {
  const float m_i = m - k.one_minus_beta1 * m + k.one_minus_beta1 * g_prime;
  const float v_i = v - k.one_minus_beta2 * v + k.one_minus_beta2 * g_prime * g_prime;
  m = m_i;
  v = v_i;
}

// m_hat / (sqrt(v_hat + eps_in) + eps_out) + wd w: Adam's step direction with decoupled decay,
// and LAMB's u (eps_in = 0) before its trust ratio.
LBT_HOST_DEVICE inline float adam_direction(float m, float v, float w, float wd,
                                            const AdamCoefficients& k) {
  const float m_hat = m * k.inv_bc1, v_hat = v * k.inv_bc2;
  return m_hat / (sqrt_f(v_hat + k.eps_in) + k.eps_out) + wd * w;
}

LBT_HOST_DEVICE inline void adam(float& w, float& m, float& v, float g_prime, float wd, float lr,
                                 const AdamCoefficients& k) {
  adam_moments(m, v, g_prime, k);
  w -= lr * adam_direction(m, v, w, wd, k);
}

// ---- LARS (You et al. 2017 Alg. 1): v = mu v + a (g + beta w); w -= c v, where (a, c) carry the
// learning rate and the trust ratio on either side of the momentum (lars.hpp) ----
LBT_HOST_DEVICE inline void lars_plain(float& w, float g, float beta, float a, float c) {
  w -= c * (a * (g + beta * w));
}

LBT_HOST_DEVICE inline void lars_momentum(float& w, float& v, float g, float beta, float a, float c,
                                          float one_minus_mu) {
  const float v_k = v - one_minus_mu * v + a * (g + beta * w);
  v = v_k;
  w -= c * v_k;
}

// x^2 in double: every norm the trust ratios and the noise statistics accumulate.
LBT_HOST_DEVICE inline double square(double x) {
  return x * x;
}

}  // namespace lbt::optim::rules
