// LAMB fused per segment: pass 1 updates m, v and accumulates |w|^2, |u|^2 in double; pass 2
// recomputes u from m, v and applies the trust-scaled step. Segments without a trust ratio
// take one AdamW pass. You et al. 2019, arXiv:1904.00962, Alg. 2; see lamb.hpp.
#include "optim/lamb.hpp"

#include <cmath>
#include <sstream>

#include "optim/adam.hpp"
#include "optim/flat_ops.hpp"
#include "optim/fused_loops.hpp"
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
    const std::size_t first = seg.offset + c.begin, n = c.end - c.begin;
    float* w = in.params.data() + first;
    const float* g = in.grads.data() + first;
    if (!trusted[c.segment]) {  // AdamW step in one pass (g' = 1 (g + 0 w) = g)
      loops::adam(w, m_all + first, v_all + first, g, n, 1.0f, 0.0f, lambda, lr, k);
      return std::array<double, 2>{0.0, 0.0};
    }
    return loops::lamb_moments_and_norms(w, m_all + first, v_all + first, g, n, lambda, k);
  };
  // Pass 2, trust-ratio segments: w -= lr * ratio * u.
  auto update = [=, this, &in, &trusted](const detail::Chunk& c,
                                         const std::array<double, 2>& sums) {
    if (!trusted[c.segment]) return;
    const Segment& seg = in.segments[c.segment];
    const float lambda = seg.weight_decay ? wd : 0.0f;
    const float size =
        static_cast<float>(in.lr * lamb_ratio(options_, std::sqrt(sums[0]), std::sqrt(sums[1])));
    const std::size_t first = seg.offset + c.begin;
    loops::lamb_update(in.params.data() + first, m_all + first, v_all + first, c.end - c.begin,
                       lambda, size, k);
  };
  detail::norms_then_update<2>(detail::plan_groups(in.segments), moments_and_norms, update);
}

std::string Lamb::describe() const {
  return "LAMB(" + optim::describe(options_) + ")";
}

}  // namespace lbt::optim
