// LAMB, You et al. 2019, arXiv:1904.00962, Alg. 2: the Adam direction plus decoupled weight
// decay, rescaled per segment by the trust ratio phi(|w| / |r + lambda w|). t = step + 1:
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;  (optionally bias-corrected)
//   r = m_hat / (sqrt(v_hat) + eps);  u = r + lambda w;  w -= lr * phi(|w| / |u|) * u.
// phi: identity, or DeepSpeed's clamp of the ratio; ratio 1 when |w| or |u| is 0 (optax).
#pragma once
#include "core/config.hpp"
#include "optim/optimizer.hpp"
#include "optim/trust_ratio.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

// Where the trust ratio applies: every segment whose trust_ratio flag is set (optax), or only
// segments that are decayed with weight_decay > 0 (timm, always_adapt = false).
enum class LambScope { kSegment, kDecayed };

struct LambOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  bool bias_correction = true;
  double weight_decay = 0.01;  // lambda in the paper, decoupled
  LambScope scope = LambScope::kSegment;
  PhiOptions phi{Phi::kIdentity, 0.01, 10.0};
};

void validate(const LambOptions& options, const Config& config);
std::string describe(const LambOptions& options);

// Whether LAMB's trust ratio applies to `seg` under the chosen scope.
bool lamb_applies_trust_ratio(const LambOptions& o, const Segment& seg);
// phi(|w| / |u|) with the zero-norm rule.
double lamb_ratio(const LambOptions& o, double w_norm, double u_norm);
// The per-element coefficients of LAMB's moments and direction u at `step` (eps outside the
// square root; bias correction as configured), for every backend's kernel.
rules::AdamCoefficients lamb_coefficients(const LambOptions& o, std::int64_t step);

class Lamb final : public Optimizer {
 public:
  Lamb(LambOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override;

 private:
  LambOptions options_;
};

}  // namespace lbt::optim
