// SGD with heavy-ball momentum and coupled L2 weight decay (PyTorch torch.optim.SGD form):
//   g' = g + wd * w;  buf = momentum * buf + g';  w -= lr * buf.
#pragma once
#include "optim/optimizer.hpp"

namespace lbt::optim {

struct SgdOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;
};

void validate(const SgdOptions& options, const Config& config);
SgdOptions read_sgd_options(Config& config);

class Sgd final : public Optimizer {
 public:
  Sgd(SgdOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override;

 private:
  SgdOptions options_;
};

}  // namespace lbt::optim
