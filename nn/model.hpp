// A sequential model built from a spec string or a layer list (layer_spec.hpp), owning its flat
// ParameterStore and activation buffers (allocated once for the largest batch and reused every
// step).
//   mlp:784-512-512-10   Linear/ReLU stack (ReLU between, none after the last layer)
//   linear:784-10        one Linear layer (logistic regression with cross-entropy,
//                        linear regression with squared error)
//   logistic:784-10      alias of linear (say which loss you mean)
//   cnn:simple[-CLASSES] Shallue et al. 2018's simple CNN (model_zoo.cpp), images [C, H, W]
//   resnet:DEPTH[-CLASSES]  He et al. 2016's CIFAR ResNet, DEPTH = 6n + 2 (8, 20, 32, ...)
// Every form takes a ":nobias" suffix (mlp:784-512-10:nobias, cnn:simple:nobias): no Linear or
// Conv2d layer then has a bias parameter (ResNet's convs never have one; its last Linear loses it).
// Image models take the input shape [C, H, W] (the dataset's `shape`); Flatten is implicit,
// since activations are flat NCHW rows.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/tensor.hpp"
#include "nn/backend.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"
#include "nn/layer_spec.hpp"

namespace lbt::nn {

class Model {
 public:
  // Throws ConfigError naming `spec` and the valid forms when it cannot be parsed.
  // @param input_shape per-example shape from the dataset ({1, 28, 28}); empty: the family's
  //        default (cnn: [1, 28, 28], resnet: [3, 32, 32]); mlp/linear ignore it.
  // The layers are made by `backend` (nn/backend.hpp), the CPU one unless another is given.
  static std::unique_ptr<Model> from_spec(const std::string& spec, InitScheme init,
                                          const std::vector<std::int64_t>& input_shape = {},
                                          const Backend& backend = cpu_backend());
  // The same from a layer list ([[model.layers]], layer_spec.hpp) for examples of `input_shape`
  // (the dataset's); throws ConfigError naming the layer that does not fit.
  static std::unique_ptr<Model> from_layers(const std::vector<LayerSpec>& layers, InitScheme init,
                                            const std::vector<std::int64_t>& input_shape,
                                            const Backend& backend = cpu_backend());

  explicit Model(const Backend& backend = cpu_backend()) : backend_(&backend) {}
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  void add(std::unique_ptr<Layer> layer);
  // Registers all parameters, allocates the flat buffers, and initialises from `rng`. Throws
  // ConfigError, before allocating, where parameters and gradients pass the machine's memory.
  void build(Rng& rng);
  // Registers every layer's parameters in store() (names, sizes, kinds) without allocating them:
  // the segment table `lbt train --check` checks the optimizer and the noise estimator against.
  // build() registers them when this was not called.
  void register_params();
  // Allocates every layer's output and its gradient for `max_batch` examples; throws
  // ConfigError naming the widest layer, before allocating, where they pass the machine's memory.
  void reserve(std::int64_t max_batch);
  // reserve()'s check alone, on the layers' shapes (no parameters needed): a run checks the
  // largest batch it will reserve before allocating anything (experiments/run_check.hpp); with
  // `threads` > 0 the layers' workspaces at that many threads count too.
  void check_activations_fit(std::int64_t batch, int threads = 0) const;
  // Memory of a model reserved for `batch` examples (trainer/memory_estimate.hpp counts with
  // these): every layer's output and its gradient, and the conv-BatchNorm moments.
  std::int64_t activation_bytes(std::int64_t batch) const;
  // Those floats per example: the slope of activation_bytes, without its page rounding.
  std::int64_t activation_floats_per_example() const;
  // The layers' own buffers (Layer::workspace_bytes) at `batch` with `threads` threads.
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const;
  // After build: moves the flat gradient buffer into `memory` (ParameterStore::place_grads)
  // and binds every layer to it again.
  void place_grads(std::span<float> memory, std::shared_ptr<void> owner);
  // The same for the parameters (ParameterStore::place_params).
  void place_params(std::span<float> memory, std::shared_ptr<void> owner, bool copy_values);

  // x: [batch, input_dim] -> returns [batch, output_dim] (valid until the next forward).
  const float* forward(const float* x, std::int64_t batch, bool train);
  // Buffer the loss writes d(loss)/d(output) into: [batch, output_dim].
  float* output_grad() { return grads_.back().data(); }
  // Told after each layer's backward that grads()[from, num_params) are final: parameters lie
  // in layer order, so the layers done so far own the buffer's suffix. A plain callback, so the
  // trainer can start reducing that suffix (train.overlap_comm) without nn/ knowing of it.
  using GradsReady = std::function<void(std::size_t from)>;
  // Backpropagates output_grad() into store().grads(): overwrites them when `accumulate` is
  // false (first micro-batch of a step), adds to them otherwise (gradient accumulation).
  // `on_ready`, when set, hears of each layer that wrote parameter gradients, last to first.
  void backward(const float* x, std::int64_t batch, bool accumulate,
                const GradsReady& on_ready = {});

  std::int64_t input_dim() const { return layers_.front()->in_features(); }
  std::int64_t output_dim() const { return layers_.back()->out_features(); }
  // What computes this model's layers and the loss and reductions on its buffers.
  const Backend& backend() const { return *backend_; }
  ParameterStore& store() { return store_; }
  const ParameterStore& store() const { return store_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Activation that layer i consumed in the last forward ([batch, in_features]).
  const float* layer_input(std::size_t i, const float* x) const {
    return i == 0 ? x : acts_[i - 1].data();
  }
  // Gradient w.r.t. layer i's output from the last backward ([batch, out_features]); not
  // written for a convolution that reads it through the next layer's BatchNorm map (below).
  const float* layer_output_grad(std::size_t i) const { return grads_[i].data(); }
  std::string describe() const;
  const std::string& spec() const { return spec_; }
  // Non-parameter state of every layer in order (BatchNorm running statistics), for checkpoints.
  std::vector<std::span<float>> buffers();
  // Seeds the random streams of layers that draw while training (Dropout) from (seed, rank).
  void seed_streams(std::uint64_t seed, std::uint64_t rank);
  // Every layer's stream position (Layer::stream_state), in order, for checkpoints.
  std::vector<std::string> stream_states() const;
  // Throws DataError when `states` was saved from a model with a different layer count.
  void set_stream_states(const std::vector<std::string>& states);
  // Per-example input shape the model was built for ({} for mlp/linear: any dim-sized row).
  const std::vector<std::int64_t>& input_shape() const { return input_shape_; }
  void set_spec(std::string spec, std::vector<std::int64_t> input_shape) {
    spec_ = std::move(spec), input_shape_ = std::move(input_shape);
  }

 private:
  void check_params_fit() const;

  const Backend* backend_;
  std::string spec_;
  std::vector<std::int64_t> input_shape_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<AlignedBuffer> acts_, grads_;  // per layer output and its gradient
  // CPU backend: a convolution followed by a BatchNorm, as ResNet's stem: in train mode the
  // convolution sums its output's per-plane moments for the BatchNorm's statistics (no pass over
  // the output), and where it can it reads the BatchNorm's output gradient through the BatchNorm's
  // map (the BatchNorm's input gradient is not written and read back). Indexed by the conv's layer.
  struct ConvBatchNorm {
    Conv2d* conv = nullptr;
    BatchNorm* bn = nullptr;
  };
  std::vector<ConvBatchNorm> conv_bn_;
  AlignedBuffer moments_;  // [batch][3][channels] of the pair being run
  void backward_layer(std::size_t i, const float* x, std::int64_t batch, bool accumulate);
  bool reads_bn_map(std::size_t conv) const {
    return conv_bn_[conv].conv && conv_bn_[conv].conv->reads_mapped_gradient(conv > 0);
  }
  ParameterStore store_;
  // Per layer: the offset of its first parameter in the flat buffers, or kNoParams.
  static constexpr std::size_t kNoParams = static_cast<std::size_t>(-1);
  std::vector<std::size_t> grads_from_;
  // Per layer: its first segment (segments().size() when it has none); empty until registered.
  std::vector<std::size_t> first_segment_;
  std::int64_t capacity_ = 0;
};

}  // namespace lbt::nn
