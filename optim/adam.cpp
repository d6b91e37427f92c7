// Adam / AdamW fused per segment (llm.c adamw_kernel style): one pass reads g, w, m, v and
// writes m, v, w. See adam.hpp for the equations.
#include "optim/adam.hpp"

#include <cmath>
#include <sstream>

#include "optim/flat_ops.hpp"
#include "optim/fused_loops.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

void validate_adam_moments(double beta1, double beta2, double eps, double weight_decay,
                           const Config& config) {
  if (!(beta1 >= 0.0 && beta1 < 1.0))
    config.fail("optimizer.beta1", "in [0, 1)", std::to_string(beta1), "the usual value is 0.9");
  if (!(beta2 >= 0.0 && beta2 < 1.0))
    config.fail("optimizer.beta2", "in [0, 1)", std::to_string(beta2), "the usual value is 0.999");
  if (!(eps > 0.0)) config.fail("optimizer.eps", "> 0", std::to_string(eps));
  if (!(weight_decay >= 0.0))
    config.fail("optimizer.weight_decay", ">= 0", std::to_string(weight_decay));
}

void validate(const AdamOptions& o, const Config& config) {
  validate_adam_moments(o.beta1, o.beta2, o.eps, o.weight_decay, config);
}

std::string describe(const AdamOptions& o) {
  std::ostringstream ss;
  ss << "b1=" << o.beta1 << ", b2=" << o.beta2 << ", eps=" << o.eps
     << ", eps_inside_sqrt=" << (o.eps_inside_sqrt ? "true" : "false") << ", wd=" << o.weight_decay
     << (o.decoupled ? " (decoupled)" : " (coupled L2)");
  return ss.str();
}

double bias_correction(double beta, std::int64_t step) {
  return 1.0 - std::pow(beta, static_cast<double>(step + 1));
}

// beta m is written m - (1 - beta) m, with 1 - beta computed in double and rounded once, so
// beta itself never enters in float: float(0.999) is 1.3e-8 off, so 1.0f - float(0.999) was
// 218 x 2^-24 off 1e-3 (the step 109 x 2^-24 off what the double bias correction assumes), and
// even with 1 - beta exact a v decayed by float(beta2) drifts ~1.3e-8 per step of its age.
// Same cost (two multiply-adds). Not the lerp m + (1 - beta)(g - m): at beta = 0 that
// loses a g much smaller than the old m (v can reach 0).
rules::AdamCoefficients adam_coefficients(const AdamOptions& o, std::int64_t step) {
  const float eps = static_cast<float>(o.eps);
  // sqrt(v_hat + eps_in) + eps_out covers both placements without a branch in the loop.
  return {static_cast<float>(1.0 - o.beta1),
          static_cast<float>(1.0 - o.beta2),
          static_cast<float>(1.0 / bias_correction(o.beta1, step)),
          static_cast<float>(1.0 / bias_correction(o.beta2, step)),
          o.eps_inside_sqrt ? eps : 0.0f,
          o.eps_inside_sqrt ? 0.0f : eps};
}

Adam::Adam(AdamOptions options, std::size_t num_params) : options_(options) {
  state_.add("m", num_params);
  state_.add("v", num_params);
}

void Adam::step(const StepInput& in) {
  const float l2 = options_.decoupled ? 0.0f : static_cast<float>(options_.weight_decay);
  std::vector<GradTransform> t;
  t.reserve(in.segments.size());
  for (const Segment& seg : in.segments) t.push_back({1.0f, seg.weight_decay ? l2 : 0.0f});
  step_transformed(in, t);
}

void Adam::step_transformed(const StepInput& in, std::span<const GradTransform> transforms) {
  const float lr = static_cast<float>(in.lr);
  const rules::AdamCoefficients k = adam_coefficients(options_, in.step);
  const float decoupled_wd = options_.decoupled ? static_cast<float>(options_.weight_decay) : 0.0f;
  float* m_all = state_.get("m").data();
  float* v_all = state_.get("v").data();
  const auto plan = detail::plan_chunks(in.segments);
  detail::for_each_chunk(plan, [=, &plan](std::size_t c) {
    const auto [s, begin, end] = plan[c];
    const Segment& seg = in.segments[s];
    const float scale = transforms[s].scale, l2 = transforms[s].l2;
    const float wd = seg.weight_decay ? decoupled_wd : 0.0f;
    const std::size_t first = seg.offset + begin;
    loops::adam(in.params.data() + first, m_all + first, v_all + first, in.grads.data() + first,
                end - begin, scale, l2, wd, lr, k);
  });
}

std::string Adam::describe() const {
  return std::string(options_.decoupled ? "AdamW(" : "Adam(") + optim::describe(options_) + ")";
}

}  // namespace lbt::optim
