// LARS, You, Gitman & Ginsburg 2017, arXiv:1708.03888, Alg. 1 (layer-wise adaptive rate
// scaling). Per segment l with weight decay beta and trust coefficient eta:
//   local_lr = eta * |w| / (|g| + beta * |w|)          (denominator "paper"; "exact": |g + beta w|)
//   classic (paper):  v = m v + lr * local_lr * (g + beta w);  w -= v
//   popular:          v = m v + local_lr * (g + beta w);       w -= lr * v
// Segments with trust_ratio off use local_lr = 1, i.e. plain momentum SGD.
#pragma once
#include "core/config.hpp"
#include "optim/optimizer.hpp"
#include "optim/trust_ratio.hpp"

namespace lbt::optim {

enum class LarsDenominator { kPaper, kExact };                   // |g| + beta|w|  vs  |g + beta w|
enum class LarsLrPlacement { kBeforeMomentum, kAfterMomentum };  // classic vs popular

struct LarsOptions {
  double momentum = 0.9;
  double weight_decay = 0.0005;      // beta in the paper
  double trust_coefficient = 0.001;  // eta in the paper
  double eps = 0.0;                  // added to the denominator
  LarsDenominator denominator = LarsDenominator::kPaper;
  LarsLrPlacement lr_placement = LarsLrPlacement::kBeforeMomentum;
  bool safe_zero_norm = true;  // ratio 1 when |w| or the denominator is 0
  PhiOptions phi{Phi::kIdentity, 0.0, 10.0};
};

void validate(const LarsOptions& options, const Config& config);
std::string describe(const LarsOptions& options);

// The LARS local learning rate for one segment from its norms: eta * phi(|w| / (|u| + eps)),
// u the denominator, or 1 where a norm is 0 and safe_zero_norm holds; `decay` is beta for this
// segment (0 where decay is off).
double lars_local_lr(const LarsOptions& o, double w_norm, double g_norm, double g_plus_decay_norm,
                     double decay);

class Lars final : public Optimizer {
 public:
  Lars(LarsOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override;

 private:
  LarsOptions options_;
};

}  // namespace lbt::optim
