// Adam (Kingma & Ba 2014, arXiv:1412.6980, Alg. 1) with coupled L2 decay, and AdamW
// (Loshchilov & Hutter 2019, arXiv:1711.05101, Alg. 2) with decoupled decay scaled by lr
// (PyTorch/optax convention). t = step + 1:
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;
//   m_hat = m / (1 - beta1^t);  v_hat = v / (1 - beta2^t);
//   w -= lr * (m_hat / (sqrt(v_hat) + eps) + wd_decoupled * w)   [or / sqrt(v_hat + eps)].
#pragma once
#include "core/config.hpp"
#include "optim/optimizer.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool eps_inside_sqrt = false;  // sqrt(v_hat + eps) instead of sqrt(v_hat) + eps
  double weight_decay = 0.0;
  bool decoupled = false;  // false: Adam (g += wd*w); true: AdamW (w -= lr*wd*w)
};

// The checks Adam and LAMB share: beta1, beta2 in [0, 1), eps > 0, weight_decay >= 0.
void validate_adam_moments(double beta1, double beta2, double eps, double weight_decay,
                           const Config& config);
void validate(const AdamOptions& options, const Config& config);
std::string describe(const AdamOptions& options);

// Bias corrections 1 - beta^t with t = step + 1.
double bias_correction(double beta, std::int64_t step);
// The per-element coefficients of Adam's moments and direction at `step`, for every backend's
// kernel.
rules::AdamCoefficients adam_coefficients(const AdamOptions& o, std::int64_t step);

class Adam final : public SegmentwiseOptimizer {
 public:
  Adam(AdamOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  void step_transformed(const StepInput& in, std::span<const GradTransform> t) override;
  std::string describe() const override;
  bool elementwise() const override { return true; }

 private:
  AdamOptions options_;
};

}  // namespace lbt::optim
