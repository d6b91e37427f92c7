// LARC, NVIDIA Apex (apex/parallel/LARC.py), after LARS (You et al. 2017, arXiv:1708.03888):
// wraps a base optimizer and rescales each segment's gradient before the base step:
//   local_lr = coeff * |w| / (|g| + wd * |w| + eps)
//   clip:  g <- (g + wd w) * min(local_lr / lr, 1);   scale:  g <- (g + wd w) * local_lr
// The base runs with weight decay 0 (Apex folds decay into the gradient). When |w| or |g| is 0
// the gradient is left as is (Apex). Segments with trust_ratio off only get the decay.
#pragma once
#include <memory>

#include "core/config.hpp"
#include "optim/optimizer.hpp"

namespace lbt::optim {

enum class LarcMode { kClip, kScale };

struct LarcOptions {
  LarcMode mode = LarcMode::kClip;
  double trust_coefficient = 0.02;  // Apex default
  double eps = 1e-8;
  double weight_decay = 0.0;
};

void validate(const LarcOptions& options, const Config& config);
std::string describe(const LarcOptions& options);

// The factor applied to (g + wd w) for one segment (1 when a norm is 0), Apex semantics.
double larc_factor(const LarcOptions& o, double w_norm, double g_norm, double decay, double lr);

class Larc final : public Optimizer {
 public:
  // `base` must have been built with weight decay 0.
  Larc(LarcOptions options, std::unique_ptr<SegmentwiseOptimizer> base);
  void step(const StepInput& in) override;
  std::string describe() const override;
  OptimizerState& state() override { return base_->state(); }

 private:
  LarcOptions options_;
  std::unique_ptr<SegmentwiseOptimizer> base_;
};

}  // namespace lbt::optim
