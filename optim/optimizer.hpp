// Optimizer interface over the flat parameter buffer and the segment table.
// Conventions (stated once, here and in schedules/schedule.hpp): `step` is 0-based; the first
// update is step 0 and receives lr = schedule(0); Adam-style bias correction uses t = step + 1.
// The learning rate comes from schedules/ every step and is never computed in here.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/params.hpp"
#include "core/tensor.hpp"

namespace lbt::optim {

using lbt::Segment;

struct StepInput {
  std::span<float> params;            // [num_params], flat
  std::span<const float> grads;       // [num_params], flat, already averaged across ranks
  std::span<const Segment> segments;  // the model's segment table
  double lr;                          // from schedules/
  std::int64_t step;                  // 0-based; bias correction uses step + 1
};

// Named flat buffers ("momentum", "m", "v"), each laid out like the parameters, so checkpoints
// and a later sharded optimizer treat them like parameters.
class OptimizerState {
 public:
  AlignedBuffer& add(const std::string& name, std::size_t size);  // zero-initialised
  AlignedBuffer& get(const std::string& name);
  std::vector<std::pair<std::string, AlignedBuffer>>& buffers() { return buffers_; }
  const std::vector<std::pair<std::string, AlignedBuffer>>& buffers() const { return buffers_; }

 private:
  std::vector<std::pair<std::string, AlignedBuffer>> buffers_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(const StepInput& in) = 0;
  virtual std::string describe() const = 0;  // "SGD(momentum=0.9, nesterov=false, wd=0)"
  OptimizerState& state() { return state_; }
  const OptimizerState& state() const { return state_; }

 protected:
  OptimizerState state_;
};

// Reads the `optimizer.*` keys of `config`, validates them and builds the optimizer with its
// state sized for `num_params`. Unknown optimizer names list the valid ones.
std::unique_ptr<Optimizer> make_optimizer(Config& config, std::size_t num_params);

// The base learning rate `optimizer.lr` (before scaling rules and schedules), validated > 0.
double base_learning_rate(Config& config);

}  // namespace lbt::optim
