// The flat parameter buffer, the flat gradient buffer and the segment table that names each
// tensor inside them (docs/DESIGN.md "The parts"). Allreduce, checkpoints, norms and
// optimizer kernels walk one contiguous array; layer-wise methods use the segment table.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/tensor.hpp"

namespace lbt {

enum class ParamKind { kWeight, kBias, kNorm };

const char* to_string(ParamKind kind);

// One parameter tensor inside the flat buffer.
struct Segment {
  std::string name;  // "fc1.weight"
  std::size_t offset = 0, size = 0;
  ParamKind kind = ParamKind::kWeight;
  bool weight_decay = true;  // apply (coupled or decoupled) weight decay?
  bool trust_ratio = true;   // apply LARS/LARC/LAMB layer-wise scaling?
};

// Default policy (Goyal et al. 2017 §5.1; You et al. 2017; timm/optax defaults): biases and
// normalisation parameters get neither weight decay nor trust-ratio scaling.
Segment make_segment(std::string name, std::size_t offset, std::size_t size, ParamKind kind);

// Owns params and grads; layers register tensors first, then `allocate()` fixes the layout
// and hands out views that stay valid for the store's lifetime.
class ParameterStore {
 public:
  // Reserves `size` floats for a named tensor; returns its segment index.
  std::size_t add(std::string name, std::size_t size, ParamKind kind);
  // Fixes the layout and allocates params and grads on `device` (the model's backend).
  void allocate(const Device& device = host_device());

  std::size_t num_params() const { return total_; }
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }
  std::span<const float> grads() const { return grads_; }
  std::vector<Segment>& segments() { return segments_; }
  const std::vector<Segment>& segments() const { return segments_; }

  float* param_ptr(std::size_t segment) { return params_.data() + segments_[segment].offset; }
  float* grad_ptr(std::size_t segment) { return grads_.data() + segments_[segment].offset; }
  void zero_grads();
  // Moves the gradients (values kept) into `memory`, at least num_params() floats, 64-byte
  // aligned; `owner` keeps it alive for the store's lifetime. Data-parallel training puts them
  // where the communicator reduces fastest (Communicator::gradient_memory). Pointers from
  // grad_ptr taken before are stale: layers bind again (Model::place_grads).
  void place_grads(std::span<float> memory, std::shared_ptr<void> owner);
  // The same for the parameters; copy_values false: `memory` already holds them (another
  // rank of the node copied them into the one shared buffer).
  void place_params(std::span<float> memory, std::shared_ptr<void> owner, bool copy_values);

 private:
  std::vector<Segment> segments_;
  std::size_t total_ = 0;
  bool allocated_ = false;
  AlignedBuffer own_params_, own_grads_;
  std::span<float> params_, grads_;                   // own buffers, or memory given to place_*
  std::shared_ptr<void> params_owner_, grads_owner_;  // keep that memory alive
};

}  // namespace lbt
