// Step-by-step optimizers written as in each paper's algorithm box, in separate passes over
// each segment (decay -> trust ratio -> lr -> momentum), in double precision, with state kept
// in the same named float buffers as the fused path. The test oracle, never the fast path.
// SGD: PyTorch torch.optim.SGD; Adam/AdamW: arXiv:1412.6980 Alg. 1, arXiv:1711.05101 Alg. 2;
// LARS: arXiv:1708.03888 Alg. 1; LARC: NVIDIA Apex LARC.py; LAMB: arXiv:1904.00962 Alg. 2.
#pragma once
#include <memory>

#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/larc.hpp"
#include "optim/lars.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_options.hpp"
#include "optim/sgd.hpp"

namespace lbt::optim::reference {

class Sgd final : public Optimizer {
 public:
  Sgd(SgdOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override { return "reference SGD(" + optim::describe(o_) + ")"; }

 private:
  SgdOptions o_;
};

class Adam final : public Optimizer {
 public:
  Adam(AdamOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override { return "reference Adam(" + optim::describe(o_) + ")"; }

 private:
  AdamOptions o_;
};

class Lars final : public Optimizer {
 public:
  Lars(LarsOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override { return "reference LARS(" + optim::describe(o_) + ")"; }

 private:
  LarsOptions o_;
};

class Larc final : public Optimizer {
 public:
  Larc(LarcOptions options, std::unique_ptr<Optimizer> base, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override { return "reference LARC(" + optim::describe(o_) + ")"; }
  OptimizerState& state() override { return base_->state(); }

 private:
  LarcOptions o_;
  std::unique_ptr<Optimizer> base_;
  std::vector<float> scaled_grads_;  // [num_params], the rescaled gradient handed to the base
};

class Lamb final : public Optimizer {
 public:
  Lamb(LambOptions options, std::size_t num_params);
  void step(const StepInput& in) override;
  std::string describe() const override { return "reference LAMB(" + optim::describe(o_) + ")"; }

 private:
  LambOptions o_;
};

// The reference version of what make_optimizer builds from the same options.
std::unique_ptr<Optimizer> make_reference_optimizer(const OptimizerOptions& options,
                                                    std::size_t num_params);

}  // namespace lbt::optim::reference
