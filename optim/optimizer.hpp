// Optimizer interface over the flat parameter buffer and the segment table.
// Conventions (stated once, here and in schedules/schedule.hpp): `step` is 0-based; the first
// update is step 0 and receives lr = schedule(0); Adam-style bias correction uses t = step + 1;
// SGD momentum starts as buf = g at step 0 (PyTorch). The learning rate comes from schedules/
// every step and is never computed in here.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

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
  bool has(const std::string& name) const;
  // Moves every buffer (values kept) to memory allocated by `device`: make_optimizer puts the
  // state on the model's backend.
  void place_on(const Device& device);
  std::vector<std::pair<std::string, AlignedBuffer>>& buffers() { return buffers_; }
  const std::vector<std::pair<std::string, AlignedBuffer>>& buffers() const { return buffers_; }

 private:
  std::vector<std::pair<std::string, AlignedBuffer>> buffers_;
};

// Writes every buffer (name, size, floats) in a small binary format ("LBTOPT1").
void save_state(const OptimizerState& state, std::ostream& out);
// Reads into an already-built state; names, order and sizes must match, else DataError
// naming `source`, the byte offset and expected vs got.
void load_state(OptimizerState& state, std::istream& in, const std::string& source = "<stream>");

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(const StepInput& in) = 0;
  virtual std::string describe() const = 0;  // every switch: "SGD(momentum=0.9, ...)"
  // True when every parameter's update reads only its own element of params, grads and state:
  // then a step over a segment table clipped to a range updates exactly that range (the
  // trainer's sharded step). Layer-wise methods (LARS, LARC, LAMB) need whole segments.
  virtual bool elementwise() const { return false; }
  virtual OptimizerState& state() { return state_; }
  const OptimizerState& state() const { return const_cast<Optimizer*>(this)->state(); }

 protected:
  OptimizerState state_;
};

// How a wrapper hands a base optimizer a rescaled, decayed gradient without a copy:
// g' = scale * (g + l2 * w) (Apex LARC folds weight decay into the gradient this way).
struct GradTransform {
  float scale = 1.0f;
  float l2 = 0.0f;
};

// An optimizer whose update is independent per segment, so LARC can wrap it.
class SegmentwiseOptimizer : public Optimizer {
 public:
  // Updates every segment s with g' = t[s].scale * (g + t[s].l2 * w) in place of g
  // ([segments.size()] transforms); the optimizer's own coupled decay is not added here
  // (step() passes it in t.l2).
  virtual void step_transformed(const StepInput& in, std::span<const GradTransform> t) = 0;
};

// Whether a glob pattern (`*` and `?`) matches a whole segment name (optimizer.no_decay).
bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace lbt::optim
