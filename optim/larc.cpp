// LARC fused: one pass per segment for |w|, |g|, then the base optimizer's fused segment
// update with the gradient transform g' = factor * (g + wd w), so no gradient copy is made.
// NVIDIA Apex apex/parallel/LARC.py; see larc.hpp.
#include "optim/larc.hpp"

#include <cmath>
#include <sstream>

#include "optim/flat_ops.hpp"
#include "optim/fused_loops.hpp"
#include "optim/trust_ratio.hpp"

namespace lbt::optim {

void validate(const LarcOptions& o, const Config& config) {
  if (!(o.trust_coefficient > 0.0))
    config.fail("optimizer.larc.trust_coefficient", "> 0", std::to_string(o.trust_coefficient));
  if (!(o.eps >= 0.0)) config.fail("optimizer.larc.eps", ">= 0", std::to_string(o.eps));
  if (!(o.weight_decay >= 0.0))
    config.fail("optimizer.weight_decay", ">= 0", std::to_string(o.weight_decay));
}

std::string describe(const LarcOptions& o) {
  std::ostringstream ss;
  ss << "mode=" << (o.mode == LarcMode::kClip ? "clip" : "scale")
     << ", trust_coefficient=" << o.trust_coefficient << ", eps=" << o.eps
     << ", wd=" << o.weight_decay;
  return ss.str();
}

double larc_factor(const LarcOptions& o, double w_norm, double g_norm, double decay, double lr) {
  if (w_norm == 0.0 || g_norm == 0.0) return 1.0;
  const double local_lr = o.trust_coefficient * w_norm / (g_norm + decay * w_norm + o.eps);
  return o.mode == LarcMode::kClip ? larc_clip(local_lr, lr) : local_lr;
}

Larc::Larc(LarcOptions options, std::unique_ptr<SegmentwiseOptimizer> base)
    : options_(options), base_(std::move(base)) {}

void Larc::step(const StepInput& in) {
  // Pass 1: |w|^2 and |g|^2 of the trust-ratio segments; pass 2: the base optimizer with each
  // segment's gradient rescaled.
  const auto plan =
      detail::plan_chunks(in.segments, [](const Segment& seg) { return seg.trust_ratio; });
  auto norms = [&in](const detail::Chunk& c) {
    const std::size_t first = in.segments[c.segment].offset + c.begin;
    const auto [ww, gg, unused] = loops::weight_and_grad_norms(
        in.params.data() + first, in.grads.data() + first, c.end - c.begin, 0.0);
    return std::array<double, 2>{ww, gg};
  };
  const auto sums = detail::sum_chunks<2>(plan, in.segments.size(), norms);
  std::vector<GradTransform> transforms;
  transforms.reserve(in.segments.size());
  for (std::size_t s = 0; s < in.segments.size(); ++s) {
    const Segment& seg = in.segments[s];
    const double decay = seg.weight_decay ? options_.weight_decay : 0.0;
    GradTransform t{1.0f, static_cast<float>(decay)};
    if (seg.trust_ratio) {
      const double w_norm = std::sqrt(sums[s][0]), g_norm = std::sqrt(sums[s][1]);
      if (w_norm == 0.0 || g_norm == 0.0)
        t = {1.0f, 0.0f};  // Apex leaves such a gradient alone
      else
        t.scale = static_cast<float>(larc_factor(options_, w_norm, g_norm, decay, in.lr));
    }
    transforms.push_back(t);
  }
  base_->step_transformed(in, transforms);
}

std::string Larc::describe() const {
  return "LARC(" + optim::describe(options_) + ", base=" + base_->describe() + ")";
}

}  // namespace lbt::optim
