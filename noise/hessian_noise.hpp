// Hessian-weighted noise scale B_noise = tr(H Sigma) / (G^T H G) (McCandlish et al. 2018,
// arXiv:1812.06162, eq. 2.8), with Hessian-vector products from central finite differences of
// gradients, so any model with a gradient oracle works (no second-order backprop).
#pragma once
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace lbt::noise {

// grad(params, out): writes the (large-batch) gradient at `params` into `out`.
using GradientFn = std::function<void(std::span<const float> params, std::span<float> out)>;

// H v ~ (grad(theta + eps v) - grad(theta - eps v)) / (2 eps), error O(eps^2 |d^3 L|) from
// truncation plus O(u |grad| / eps) from float rounding (u = 2^-23); eps ~ u^(1/3) balances the
// two, so eps = cbrt(u) * (1 + |theta|) / |v| (a relative step of ~5e-3 along v). Exact for a
// quadratic up to rounding. `scratch` holds 3 * num_params floats (reused; no allocation).
void hessian_vector_product(const GradientFn& grad, std::span<const float> theta,
                            std::span<const float> v, std::span<float> Hv,
                            std::vector<float>& scratch);

struct HessianNoise {
  double tr_H_sigma = 0.0;  // tr(H Sigma)
  double gHg = 0.0;         // G^T H G
  // Their 95% half-widths, t(K-1) over the jackknife's standard errors (NaN below K = 3): the
  // probe wrote both as bare numbers (2026-11-30 audit).
  double tr_H_sigma_half = 0.0, gHg_half = 0.0;
  double b_noise = 0.0;                // tr(H Sigma) / G^T H G; NaN when not resolved
  double ci_low = 0.0, ci_high = 0.0;  // 95% (Fieller over jackknife variances); high +inf
                                       // while not resolved (reported_ratio)
  bool resolved = false;               // G^T H G resolved above 0 and B_noise >= 0
  std::size_t small_batches = 0;       // K
};

// From K >= 3 small-batch gradients g_k (batch b each, i.i.d. around G with covariance
// Sigma/b), McCandlish et al. eq. 2.8's B_noise = tr(H Sigma) / (G^T H G). With the K x K matrix
// M_kl = g_k^T H g_l (K Hessian-vector products H g_l, i.e. 2K calls of `grad`):
//   E[M_kl] = G^T H G (k != l, independent batches),  E[M_kk] = G^T H G + tr(H Sigma) / b,
// so with D = mean of the diagonal and O = mean of the off-diagonal entries (a U-statistic)
//   G^T H G = O,  tr(H Sigma) = b (D - O)            (both unbiased).
// The K small batches serve as the probe vectors: no Hutchinson draws are needed since Sigma is
// only known through them. Interval: jackknife (leave one batch out) variances and covariance
// of (tr(H Sigma), G^T H G), then Fieller's interval for their ratio with K - 1 degrees of
// freedom (fieller_interval: never below 0, unbounded above while G^T H G is within noise of
// 0). H is the Hessian of the oracle's own batch; its sampling noise is not in the interval.
HessianNoise hessian_noise_scale(const GradientFn& grad, std::span<const float> theta,
                                 const std::vector<std::vector<float>>& small_grads, double b);

// The estimate and interval above from M ([K * K], row-major, symmetric) alone.
HessianNoise hessian_noise_from_products(std::span<const double> M, std::size_t K, double b);

}  // namespace lbt::noise
