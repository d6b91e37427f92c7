// LAMB fused per segment: pass 1 updates m, v and accumulates |w|^2, |u|^2 in double; pass 2
// recomputes u from m, v and applies the trust-scaled step. Segments without a trust ratio
// take one AdamW pass. You et al. 2019, arXiv:1904.00962, Alg. 2; see lamb.hpp.
#include "optim/lamb.hpp"

#include <cmath>
#include <sstream>

#include "optim/adam.hpp"
#include "optim/flat_ops.hpp"
#include "optim/phi_config.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

void validate(const LambOptions& o, const Config& config) {
  validate_adam_moments(o.beta1, o.beta2, o.eps, o.weight_decay, config);
  validate_phi(o.phi, config, "optimizer.lamb");
}

std::string describe(const LambOptions& o) {
  std::ostringstream ss;
  ss << "b1=" << o.beta1 << ", b2=" << o.beta2 << ", eps=" << o.eps
     << ", bias_correction=" << (o.bias_correction ? "true" : "false") << ", wd=" << o.weight_decay
     << ", scope=" << (o.scope == LambScope::kSegment ? "segment" : "decayed") << ", "
     << describe_phi(o.phi);
  return ss.str();
}

bool lamb_applies_trust_ratio(const LambOptions& o, const Segment& seg) {
  if (o.scope == LambScope::kDecayed) return seg.weight_decay && o.weight_decay > 0.0;
  return seg.trust_ratio;
}

double lamb_ratio(const LambOptions& o, double w_norm, double u_norm) {
  return apply_phi(trust_ratio(w_norm, u_norm, 1.0, 0.0), o.phi);
}

rules::AdamCoefficients lamb_coefficients(const LambOptions& o, std::int64_t step) {
  const auto inv_bc = [&](double beta) {
    return o.bias_correction ? static_cast<float>(1.0 / bias_correction(beta, step)) : 1.0f;
  };
  return {static_cast<float>(1.0 - o.beta1),
          static_cast<float>(1.0 - o.beta2),
          inv_bc(o.beta1),
          inv_bc(o.beta2),
          0.0f,
          static_cast<float>(o.eps)};
}

Lamb::Lamb(LambOptions options, std::size_t num_params) : options_(options) {
  state_.add("m", num_params);
  state_.add("v", num_params);
}

void Lamb::step(const StepInput& in) {
  // beta m as m - (1 - beta) m, 1 - beta rounded once from double: see adam.cpp. u's epsilon sits
  // outside the square root.
  const rules::AdamCoefficients k = lamb_coefficients(options_, in.step);
  const float lr = static_cast<float>(in.lr);
  const float wd = static_cast<float>(options_.weight_decay);
  float* m_all = state_.get("m").data();
  float* v_all = state_.get("v").data();
  std::vector<char> trusted(in.segments.size());
  for (std::size_t s = 0; s < in.segments.size(); ++s) {
    trusted[s] = lamb_applies_trust_ratio(options_, in.segments[s]);
  }
  // Pass 1, every segment: the moments; then for trust-ratio segments |w|^2 and |u|^2 with
  // u = r + lambda w, and for the others the whole AdamW step (their sums stay 0).
  auto moments_and_norms = [=, &in, &trusted](const detail::Chunk& c) {
    const Segment& seg = in.segments[c.segment];
    const float lambda = seg.weight_decay ? wd : 0.0f;
    // Local restrict pointers: otherwise each store may alias the closure and GCC gathers.
    float* __restrict wp = in.params.data() + seg.offset;
    const float* __restrict gp = in.grads.data() + seg.offset;
    float* __restrict mp = m_all + seg.offset;
    float* __restrict vp = v_all + seg.offset;
    if (!trusted[c.segment]) {  // AdamW step in one pass
#pragma omp simd
      for (std::size_t i = c.begin; i < c.end; ++i)
        rules::adam(wp[i], mp[i], vp[i], gp[i], lambda, lr, k);
      return std::array<double, 2>{0.0, 0.0};
    }
    double ww = 0, uu = 0;
#pragma omp simd reduction(+ : ww, uu)
    for (std::size_t i = c.begin; i < c.end; ++i) {
      rules::adam_moments(mp[i], vp[i], gp[i], k);
      ww += rules::square(wp[i]);
      uu += rules::square(rules::adam_direction(mp[i], vp[i], wp[i], lambda, k));
    }
    return std::array<double, 2>{ww, uu};
  };
  // Pass 2, trust-ratio segments: w -= lr * ratio * u.
  auto update = [=, this, &in, &trusted](const detail::Chunk& c,
                                         const std::array<double, 2>& sums) {
    if (!trusted[c.segment]) return;
    const Segment& seg = in.segments[c.segment];
    const float lambda = seg.weight_decay ? wd : 0.0f;
    const float size =
        static_cast<float>(in.lr * lamb_ratio(options_, std::sqrt(sums[0]), std::sqrt(sums[1])));
    // Local restrict pointers: otherwise each store may alias the closure and GCC gathers.
    float* __restrict wp = in.params.data() + seg.offset;
    const float* __restrict mp = m_all + seg.offset;
    const float* __restrict vp = v_all + seg.offset;
#pragma omp simd
    for (std::size_t i = c.begin; i < c.end; ++i)
      wp[i] -= size * rules::adam_direction(mp[i], vp[i], wp[i], lambda, k);
  };
  detail::norms_then_update<2>(detail::plan_groups(in.segments), moments_and_norms, update);
}

std::string Lamb::describe() const {
  return "LAMB(" + optim::describe(options_) + ")";
}

}  // namespace lbt::optim
