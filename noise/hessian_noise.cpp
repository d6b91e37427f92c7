// Hessian-weighted B_noise by finite-difference Hessian-vector products; see hessian_noise.hpp.
#include "noise/hessian_noise.hpp"

#include <cfloat>
#include <cmath>

namespace lbt::noise {
namespace {

double dot(std::span<const float> a, std::span<const float> b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

void hessian_vector_product(const GradientFn& grad, std::span<const float> theta,
                            std::span<const float> v, std::span<float> Hv,
                            std::vector<float>& scratch) {
  const std::size_t n = theta.size();
  scratch.resize(3 * n);
  std::span<float> shifted(scratch.data(), n), g_plus(scratch.data() + n, n),
      g_minus(scratch.data() + 2 * n, n);
  const double v_norm = std::sqrt(dot(v, v));
  if (v_norm == 0.0) {
    std::fill(Hv.begin(), Hv.end(), 0.0f);
    return;
  }
  const double eps = std::cbrt(static_cast<double>(FLT_EPSILON)) *
                     (1.0 + std::sqrt(dot(theta, theta))) / v_norm;
  for (std::size_t i = 0; i < n; ++i) shifted[i] = static_cast<float>(theta[i] + eps * v[i]);
  grad(shifted, g_plus);
  for (std::size_t i = 0; i < n; ++i) shifted[i] = static_cast<float>(theta[i] - eps * v[i]);
  grad(shifted, g_minus);
  // central difference; the step actually taken is what float could represent, ~2 eps v
  for (std::size_t i = 0; i < n; ++i) {
    Hv[i] = static_cast<float>((static_cast<double>(g_plus[i]) - g_minus[i]) / (2.0 * eps));
  }
}

HessianNoise hessian_noise_scale(const GradientFn& grad, std::span<const float> theta,
                                 const std::vector<std::vector<float>>& small_grads, double b) {
  const std::size_t n = theta.size(), K = small_grads.size();
  std::vector<float> g_bar(n, 0.0f), diff(n), Hv(n), scratch;
  // g_bar: [n], mean of the small-batch gradients
  for (const auto& g : small_grads) {
    for (std::size_t i = 0; i < n; ++i) g_bar[i] += g[i] / static_cast<float>(K);
  }
  // sum_k (g_k - g_bar)^T H (g_k - g_bar)
  double quad = 0.0;
  for (const auto& g : small_grads) {
    for (std::size_t i = 0; i < n; ++i) diff[i] = g[i] - g_bar[i];
    hessian_vector_product(grad, theta, diff, Hv, scratch);
    quad += dot(diff, Hv);
  }
  HessianNoise h;
  h.tr_H_sigma = b * quad / static_cast<double>(K - 1);
  hessian_vector_product(grad, theta, g_bar, Hv, scratch);
  h.gHg = dot(g_bar, Hv) - h.tr_H_sigma / (static_cast<double>(K) * b);
  h.b_noise = h.tr_H_sigma / h.gHg;
  return h;
}

}  // namespace lbt::noise
