// SGD with momentum, fused per segment: one pass reads g, w, buf and writes buf, w.
// PyTorch torch.optim.SGD semantics; see sgd.hpp.
#include "optim/sgd.hpp"

#include <sstream>

#include "optim/flat_ops.hpp"
#include "optim/fused_loops.hpp"
#include "optim/update_rules.hpp"

namespace lbt::optim {

void validate(const SgdOptions& o, const Config& config) {
  if (!(o.momentum >= 0.0 && o.momentum < 1.0))
    config.fail("optimizer.momentum", "in [0, 1)", std::to_string(o.momentum));
  if (!(o.dampening >= 0.0 && o.dampening < 1.0))
    config.fail("optimizer.dampening", "in [0, 1)", std::to_string(o.dampening));
  if (!(o.weight_decay >= 0.0))
    config.fail("optimizer.weight_decay", ">= 0", std::to_string(o.weight_decay));
  // The key that breaks the rule (it named optimizer.nesterov for a dampening set beside it).
  const char* hint = "Nesterov momentum needs a momentum and no dampening (as in PyTorch)";
  if (o.nesterov && o.momentum == 0.0)
    config.fail("optimizer.momentum", "> 0 with Nesterov momentum", "0", hint);
  if (o.nesterov && o.dampening != 0.0)
    config.fail("optimizer.dampening", "0 with Nesterov momentum", std::to_string(o.dampening),
                hint);
}

std::string describe(const SgdOptions& o) {
  std::ostringstream ss;
  ss << "momentum=" << o.momentum << ", dampening=" << o.dampening
     << ", nesterov=" << (o.nesterov ? "true" : "false") << ", wd=" << o.weight_decay;
  return ss.str();
}

Sgd::Sgd(SgdOptions options, std::size_t num_params) : options_(options) {
  if (options_.momentum > 0.0) state_.add("momentum", num_params);
}

void Sgd::step(const StepInput& in) {
  const float wd = static_cast<float>(options_.weight_decay);
  std::vector<GradTransform> t;
  t.reserve(in.segments.size());
  for (const Segment& seg : in.segments) t.push_back({1.0f, seg.weight_decay ? wd : 0.0f});
  step_transformed(in, t);
}

void Sgd::step_transformed(const StepInput& in, std::span<const GradTransform> transforms) {
  // buf decays as buf - (1 - mu) buf: float(0.9) is 2.4e-8 off, which a buffer summing ~10 steps
  // of gradient turned into ~4 x 2^-24 of the update; 1 - mu rounded once from double is not.
  const rules::SgdCoefficients k{static_cast<float>(in.lr),
                                 static_cast<float>(options_.momentum),
                                 static_cast<float>(1.0 - options_.momentum),
                                 static_cast<float>(1.0 - options_.dampening),
                                 in.step == 0,
                                 options_.nesterov};
  float* momentum = options_.momentum > 0.0 ? state_.get("momentum").data() : nullptr;
  const auto plan = detail::plan_chunks(in.segments);
  detail::for_each_chunk(plan, [=, &plan](std::size_t c) {
    const auto [s, begin, end] = plan[c];
    const std::size_t offset = in.segments[s].offset;
    const float scale = transforms[s].scale, l2 = transforms[s].l2;
    float* w = in.params.data() + offset + begin;
    const float* g = in.grads.data() + offset + begin;
    if (!momentum) return loops::sgd_plain(w, g, end - begin, scale, l2, k.lr);
    loops::sgd_momentum(w, momentum + offset + begin, g, end - begin, scale, l2, k);
  });
}

std::string Sgd::describe() const {
  return "SGD(" + optim::describe(options_) + ")";
}

}  // namespace lbt::optim
