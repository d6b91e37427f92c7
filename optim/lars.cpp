// LARS fused per segment: one pass for |w|, |g| (and |g + beta w|), one pass for the update.
// You et al. 2017, arXiv:1708.03888, Alg. 1; see lars.hpp.
#include "optim/lars.hpp"

#include <cmath>
#include <sstream>

#include "optim/flat_ops.hpp"
#include "optim/fused_loops.hpp"
#include "optim/phi_config.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

void validate(const LarsOptions& o, const Config& config) {
  if (!(o.momentum >= 0.0 && o.momentum < 1.0))
    config.fail("optimizer.momentum", "in [0, 1)", std::to_string(o.momentum));
  if (!(o.weight_decay >= 0.0))
    config.fail("optimizer.weight_decay", ">= 0", std::to_string(o.weight_decay));
  if (!(o.trust_coefficient > 0.0))
    config.fail("optimizer.lars.trust_coefficient", "> 0", std::to_string(o.trust_coefficient));
  if (!(o.eps >= 0.0)) config.fail("optimizer.lars.eps", ">= 0", std::to_string(o.eps));
  if (!o.safe_zero_norm && !(o.eps > 0.0))
    config.fail("optimizer.lars.eps", "> 0 when optimizer.lars.safe_zero_norm = false",
                std::to_string(o.eps), "set optimizer.lars.eps=1e-9 or keep safe_zero_norm on");
  validate_phi(o.phi, config, "optimizer.lars");
}

std::string describe(const LarsOptions& o) {
  std::ostringstream ss;
  ss << "momentum=" << o.momentum << ", wd=" << o.weight_decay << ", eta=" << o.trust_coefficient
     << ", eps=" << o.eps
     << ", denominator=" << (o.denominator == LarsDenominator::kPaper ? "paper" : "exact")
     << ", lr_placement="
     << (o.lr_placement == LarsLrPlacement::kBeforeMomentum ? "before_momentum" : "after_momentum")
     << ", safe_zero_norm=" << (o.safe_zero_norm ? "true" : "false") << ", " << describe_phi(o.phi);
  return ss.str();
}

double lars_local_lr(const LarsOptions& o, double w_norm, double g_norm, double g_plus_decay_norm,
                     double decay) {
  const double u_norm =
      o.denominator == LarsDenominator::kPaper ? g_norm + decay * w_norm : g_plus_decay_norm;
  if (o.safe_zero_norm && (w_norm == 0.0 || u_norm == 0.0)) return 1.0;  // trust_ratio's rule
  // phi clamps |w| / |u| before eta, as DeepSpeed's LAMB clamps its ratio (which has no eta):
  // clamped after, eta = 0.001 put almost every layer on the default clamp_min of 0.01.
  return o.trust_coefficient * apply_phi(raw_trust_ratio(w_norm, u_norm, 1.0, o.eps), o.phi);
}

Lars::Lars(LarsOptions options, std::size_t num_params) : options_(options) {
  if (options_.momentum > 0.0) state_.add("momentum", num_params);
}

void Lars::step(const StepInput& in) {
  // v decays as v - (1 - mu) v with 1 - mu rounded once from double (see sgd.cpp).
  const float one_minus_mu = static_cast<float>(1.0 - options_.momentum);
  const double wd = options_.weight_decay;
  float* momentum = options_.momentum > 0.0 ? state_.get("momentum").data() : nullptr;
  const bool before = options_.lr_placement == LarsLrPlacement::kBeforeMomentum;
  // Pass 1: |w|^2, |g|^2, |g + beta w|^2 in double, for the trust-ratio segments.
  auto norms = [&in, wd](const detail::Chunk& c) {
    const Segment& seg = in.segments[c.segment];
    if (!seg.trust_ratio) return std::array<double, 3>{};
    const std::size_t first = seg.offset + c.begin;
    return loops::weight_and_grad_norms(in.params.data() + first, in.grads.data() + first,
                                        c.end - c.begin, seg.weight_decay ? wd : 0.0);
  };
  // Pass 2: v = m v + a (g + beta w); w -= c v, with (a, c) = (lr*local_lr, 1) or
  // (local_lr, lr).
  auto update = [this, &in, before, momentum, one_minus_mu, wd](const detail::Chunk& chunk,
                                                                const std::array<double, 3>& sums) {
    const Segment& seg = in.segments[chunk.segment];
    const double decay = seg.weight_decay ? wd : 0.0;  // the trust ratio sees beta in double
    const double local_lr = seg.trust_ratio
                                ? lars_local_lr(options_, std::sqrt(sums[0]), std::sqrt(sums[1]),
                                                std::sqrt(sums[2]), decay)
                                : 1.0;
    const float beta = static_cast<float>(decay);
    const float a = static_cast<float>(before ? in.lr * local_lr : local_lr);
    const float c = static_cast<float>(before ? 1.0 : in.lr);
    const std::size_t first = seg.offset + chunk.begin, n = chunk.end - chunk.begin;
    float* w = in.params.data() + first;
    const float* g = in.grads.data() + first;
    if (!momentum) return loops::lars_plain(w, g, n, beta, a, c);
    loops::lars_momentum(w, momentum + first, g, n, beta, a, c, one_minus_mu);
  };
  detail::norms_then_update<3>(detail::plan_groups(in.segments), norms, update);
}

std::string Lars::describe() const {
  return "LARS(" + optim::describe(options_) + ")";
}

}  // namespace lbt::optim
