// Pure helpers shared by LARS, LARC and LAMB: the layer-wise trust ratio (You et al. 2017,
// arXiv:1708.03888, Alg. 1; You et al. 2019, arXiv:1904.00962, Alg. 2), optax's
// safe_trust_ratio zero-norm rule, Apex LARC's clip, and the scaling function phi.
#pragma once
#include <algorithm>
#include <string>

namespace lbt::optim {

// coeff * w_norm / (u_norm + eps), or 1 when either norm is 0 (optax safe_trust_ratio): a layer
// initialised at zero, or one without gradient, still moves at the global learning rate.
inline double trust_ratio(double w_norm, double u_norm, double coeff, double eps) {
  if (w_norm == 0.0 || u_norm == 0.0) return 1.0;
  return coeff * w_norm / (u_norm + eps);
}

// The same ratio without the zero-norm rule (the formula as printed); needs u_norm + eps > 0.
inline double raw_trust_ratio(double w_norm, double u_norm, double coeff, double eps) {
  return coeff * w_norm / (u_norm + eps);
}

// Apex LARC clip mode: the effective rate lr * factor equals min(local_lr, lr), so the factor
// applied to the gradient is min(local_lr / lr, 1).
inline double larc_clip(double local_lr, double lr) { return std::min(local_lr / lr, 1.0); }

// The scaling function phi applied to a trust ratio: identity, or a clamp to [lo, hi]
// (DeepSpeed FusedLamb's min_coeff/max_coeff).
enum class Phi { kIdentity, kClamp };

struct PhiOptions {
  Phi phi = Phi::kIdentity;
  double clamp_min = 0.01;
  double clamp_max = 10.0;
};

inline double apply_phi(double ratio, const PhiOptions& o) {
  return o.phi == Phi::kClamp ? std::clamp(ratio, o.clamp_min, o.clamp_max) : ratio;
}

inline std::string describe_phi(const PhiOptions& o) {
  if (o.phi == Phi::kIdentity) return "phi=identity";
  return "phi=clamp[" + std::to_string(o.clamp_min) + ", " + std::to_string(o.clamp_max) + "]";
}

}  // namespace lbt::optim
