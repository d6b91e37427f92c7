// Hessian-weighted noise scale B_noise = tr(H Sigma) / (G^T H G) (McCandlish et al. 2018,
// arXiv:1812.06162, eq. 2.7), with Hessian-vector products from central finite differences of
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
  double b_noise = 0.0;     // tr(H Sigma) / G^T H G
};

// From K >= 2 small-batch gradients g_k (batch b each, i.i.d. around G with covariance Sigma/b):
//   tr(H Sigma) = b/(K-1) sum_k (g_k - g_bar)^T H (g_k - g_bar)          (unbiased)
//   G^T H G     = g_bar^T H g_bar - tr(H Sigma) / (K b)                 (unbiased)
// K + 1 Hessian-vector products, i.e. 2(K + 1) calls of `grad`.
HessianNoise hessian_noise_scale(const GradientFn& grad, std::span<const float> theta,
                                 const std::vector<std::vector<float>>& small_grads, double b);

}  // namespace lbt::noise
