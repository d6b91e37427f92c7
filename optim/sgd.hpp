// SGD with heavy-ball or Nesterov momentum, dampening and coupled L2 weight decay, in
// PyTorch torch.optim.SGD form (Sutskever et al. 2013 for the Nesterov variant):
//   g' = g + wd * w;  buf = g' at step 0, else momentum * buf + (1 - dampening) * g';
//   d = nesterov ? g' + momentum * buf : buf;  w -= lr * d.
#pragma once
#include "core/config.hpp"
#include "optim/optimizer.hpp"

namespace lbt::optim {

struct SgdOptions {
  double momentum = 0.9;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  // coupled L2, only on segments with weight_decay set
};

void validate(const SgdOptions& options, const Config& config);
std::string describe(const SgdOptions& options);

class Sgd final : public SegmentwiseOptimizer {
 public:
  Sgd(SgdOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  void step_transformed(const StepInput& in, std::span<const GradTransform> t) override;
  std::string describe() const override;
  bool elementwise() const override { return true; }

 private:
  SgdOptions options_;
};

}  // namespace lbt::optim
