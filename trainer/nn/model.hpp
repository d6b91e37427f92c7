// A sequential model built from a spec string, owning its flat ParameterStore and activation
// buffers (allocated once for the largest batch and reused every step).
//   mlp:784-512-512-10   Linear/ReLU stack (ReLU between, none after the last layer)
//   linear:784-10        one Linear layer (logistic regression with cross-entropy,
//                        linear regression with squared error)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/tensor.hpp"
#include "trainer/nn/layer.hpp"
#include "trainer/nn/linear.hpp"

namespace lbt::nn {

class Model {
 public:
  // Throws ConfigError naming `spec` and the valid forms when it cannot be parsed.
  static std::unique_ptr<Model> from_spec(const std::string& spec, InitScheme init);

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  void add(std::unique_ptr<Layer> layer);
  // Registers all parameters, allocates the flat buffers, and initialises from `rng`.
  void build(Rng& rng);
  void reserve(std::int64_t max_batch);

  // x: [batch, input_dim] -> returns [batch, output_dim] (valid until the next forward).
  const float* forward(const float* x, std::int64_t batch, bool train);
  // Buffer the loss writes d(loss)/d(output) into: [batch, output_dim].
  float* output_grad() { return grads_.back().data(); }
  // Backpropagates output_grad() into store().grads(): overwrites them when `accumulate` is
  // false (first micro-batch of a step), adds to them otherwise (gradient accumulation).
  void backward(const float* x, std::int64_t batch, bool accumulate);

  std::int64_t input_dim() const { return layers_.front()->in_features(); }
  std::int64_t output_dim() const { return layers_.back()->out_features(); }
  ParameterStore& store() { return store_; }
  const ParameterStore& store() const { return store_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Activation that layer i consumed in the last forward ([batch, in_features]).
  const float* layer_input(std::size_t i, const float* x) const {
    return i == 0 ? x : acts_[i - 1].data();
  }
  // Gradient w.r.t. layer i's output from the last backward ([batch, out_features]).
  const float* layer_output_grad(std::size_t i) const { return grads_[i].data(); }
  std::string describe() const;
  const std::string& spec() const { return spec_; }

 private:
  std::string spec_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<AlignedBuffer> acts_, grads_;  // per layer output and its gradient
  ParameterStore store_;
  std::int64_t capacity_ = 0;
};

}  // namespace lbt::nn
