// The flat parameter buffer, the flat gradient buffer and the segment table that names each
// tensor inside them (shared/DESIGN.md "Core ideas"). Allreduce, checkpoints, norms and
// optimizer kernels walk one contiguous array; layer-wise methods use the segment table.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

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
  void allocate();

  std::size_t num_params() const { return total_; }
  std::span<float> params() { return params_.span(); }
  std::span<const float> params() const { return params_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }
  std::vector<Segment>& segments() { return segments_; }
  const std::vector<Segment>& segments() const { return segments_; }

  float* param_ptr(std::size_t segment) { return params_.data() + segments_[segment].offset; }
  float* grad_ptr(std::size_t segment) { return grads_.data() + segments_[segment].offset; }
  void zero_grads() { grads_.zero(); }

 private:
  std::vector<Segment> segments_;
  std::size_t total_ = 0;
  bool allocated_ = false;
  AlignedBuffer params_, grads_;
};

}  // namespace lbt
