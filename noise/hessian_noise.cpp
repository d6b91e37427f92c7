// Hessian-weighted B_noise by finite-difference Hessian-vector products; see hessian_noise.hpp.
#include "noise/hessian_noise.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <utility>

#include "noise/gradient_noise.hpp"

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
  // The central difference's step: truncation error O(eps^2) against round-off O(u / eps)
  // balance at eps ~ cbrt(u) relative to theta's scale (Nocedal & Wright, Numerical
  // Optimization, 2nd ed., sec. 8.1), u float's epsilon as the gradients are float's.
  const double eps =
      std::cbrt(static_cast<double>(FLT_EPSILON)) * (1.0 + std::sqrt(dot(theta, theta))) / v_norm;
  for (std::size_t i = 0; i < n; ++i) shifted[i] = static_cast<float>(theta[i] + eps * v[i]);
  grad(shifted, g_plus);
  for (std::size_t i = 0; i < n; ++i) shifted[i] = static_cast<float>(theta[i] - eps * v[i]);
  grad(shifted, g_minus);
  // central difference; the step actually taken is what float could represent, ~2 eps v
  for (std::size_t i = 0; i < n; ++i) {
    Hv[i] = static_cast<float>((static_cast<double>(g_plus[i]) - g_minus[i]) / (2.0 * eps));
  }
}

namespace {

// (tr(H Sigma), G^T H G) from M's rows and columns but `left_out`'s (K or more: all). With
// g_k = G + e_k, E[e_k] = 0, Cov(e_k) = Sigma / b and independent batches:
// E[g_k^T H g_k] = G^T H G + tr(H Sigma) / b, E[g_k^T H g_l] = G^T H G (k != l), so the mean of
// the off-diagonal is unbiased for G^T H G and b (mean diagonal - mean off-diagonal) for
// tr(H Sigma).
std::pair<double, double> trace_and_gHg(std::span<const double> M, std::size_t K, double b,
                                        std::size_t left_out) {
  double diag = 0.0, off = 0.0;
  std::size_t n_diag = 0, n_off = 0;
  for (std::size_t k = 0; k < K; ++k) {
    if (k == left_out) continue;
    for (std::size_t l = 0; l < K; ++l) {
      if (l == left_out) continue;
      if (k == l)
        diag += M[k * K + l], ++n_diag;
      else
        off += M[k * K + l], ++n_off;
    }
  }
  const double D = diag / n_diag, O = off / n_off;
  return {b * (D - O), O};
}

}  // namespace

HessianNoise hessian_noise_from_products(std::span<const double> M, std::size_t K, double b) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  HessianNoise h;
  h.small_batches = K;
  const auto [T, Q] = trace_and_gHg(M, K, b, K);
  h.tr_H_sigma = T;
  h.gHg = Q;
  h.b_noise = h.ci_low = h.ci_high = h.tr_H_sigma_half = h.gHg_half = kNaN;
  if (K < 3) return h;  // leave-one-out needs an off-diagonal pair in every subset
  // jackknife: Var = (K-1)/K sum_i (x_(i) - mean)^2 over the leave-one-out estimates
  std::vector<std::pair<double, double>> loo(K);
  double mT = 0.0, mQ = 0.0;
  for (std::size_t i = 0; i < K; ++i) {
    loo[i] = trace_and_gHg(M, K, b, i);
    mT += loo[i].first / K, mQ += loo[i].second / K;
  }
  double vT = 0.0, vQ = 0.0, cov = 0.0;
  for (const auto& [t, q] : loo)
    vT += (t - mT) * (t - mT), vQ += (q - mQ) * (q - mQ), cov += (t - mT) * (q - mQ);
  const double scale = static_cast<double>(K - 1) / K;
  const double t = t_quantile_975(static_cast<double>(K - 1));
  h.tr_H_sigma_half = t * std::sqrt(vT * scale);
  h.gHg_half = t * std::sqrt(vQ * scale);
  const RatioInterval ci =
      fieller_interval(T, Q, vT * scale, vQ * scale, cov * scale, static_cast<double>(K - 1));
  // As B_simple's (reported_ratio): tr(H Sigma) < 0 (H indefinite) gives no positive ratio,
  // and an unresolved B_noise's interval is never bounded above.
  const ReportedRatio r = reported_ratio(T, Q, ci);
  h.resolved = r.resolved;
  h.b_noise = r.value, h.ci_low = r.lo, h.ci_high = r.hi;
  return h;
}

HessianNoise hessian_noise_scale(const GradientFn& grad, std::span<const float> theta,
                                 const std::vector<std::vector<float>>& small_grads, double b) {
  const std::size_t n = theta.size(), K = small_grads.size();
  std::vector<float> Hg(n), scratch;
  std::vector<double> M(K * K);  // M_kl = g_k^T H g_l
  for (std::size_t l = 0; l < K; ++l) {
    hessian_vector_product(grad, theta, small_grads[l], Hg, scratch);
    for (std::size_t k = 0; k < K; ++k) M[k * K + l] = dot(small_grads[k], Hg);
  }
  // H is symmetric; finite differences make M only nearly so: average the two halves
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t l = k + 1; l < K; ++l) {
      const double m = 0.5 * (M[k * K + l] + M[l * K + k]);
      M[k * K + l] = M[l * K + k] = m;
    }
  }
  return hessian_noise_from_products(M, K, b);
}

}  // namespace lbt::noise
