// Layer interface: explicit forward/backward over row-major [batch, features] activations
// (llm.c style). Layers own views into the model's flat ParameterStore; buffers for
// activations are owned by the Sequential model and allocated once for the largest batch.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/rng.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string describe() const = 0;  // "Linear(784->512)"
  virtual std::int64_t in_features() const = 0;
  virtual std::int64_t out_features() const = 0;
  // The per-example output as an image [C, H, W]; flat layers give [out_features, 1, 1].
  virtual Shape3 out_shape() const { return {out_features(), 1, 1}; }
  // Registers parameter tensors in `store` (before store.allocate()).
  virtual void register_params(ParameterStore& store, const std::string& prefix) {}
  // Takes pointers to its parameters (after store.allocate()) and initialises them.
  virtual void bind(ParameterStore& store) {}
  virtual void init(Rng& rng) {}
  // Prefix for this layer's parameter names ("fc" -> fc1.weight, "conv" -> conv2.bias).
  virtual const char* param_prefix() const { return "layer"; }
  // State that is not a parameter (BatchNorm's running statistics): a checkpoint saves these
  // beside the flat parameter buffer; the optimizer never sees them.
  virtual std::vector<std::span<float>> buffers() { return {}; }
  // Seeds layers that draw random numbers while training (Dropout) from (seed, rank), so each
  // rank draws its own masks and a run is reproducible. `index` tells layers apart.
  virtual void seed_streams(std::uint64_t seed, std::uint64_t rank, std::uint64_t& index) {}
  // The position of those streams as text ("" for layers without one), for checkpoints: a
  // resumed run draws the masks the uninterrupted run would have drawn.
  virtual std::string stream_state() const { return {}; }
  virtual void set_stream_state(const std::string& state) {}
  // Multiply-adds of one example's forward pass in the GEMM-shaped work (conv, linear), for
  // throughput as a fraction of peak: a training step is about 3 x 2 x this many FLOPs.
  virtual std::int64_t macs_per_example() const { return 0; }
  // True where one example's output depends on the other examples of the batch (BatchNorm's
  // batch statistics in train mode): per-example gradients are then not separable, and the
  // per-example noise estimator is not exact (noise/online_estimator.hpp, choose_method).
  virtual bool couples_examples() const { return false; }
  // Bytes of the buffers this layer allocates for itself (scratch, masks, saved statistics,
  // rearranged weights) once it has trained and evaluated on batches of up to `batch` with
  // `threads` threads: beyond the model's activations and the flat parameter and gradient
  // buffers. A memory estimate sums them (trainer/memory_estimate.hpp); 0: none.
  virtual std::int64_t workspace_bytes(std::int64_t batch, int threads) const { return 0; }

  // x: [batch, in], y: [batch, out]
  virtual void forward(const float* x, float* y, std::int64_t batch, bool train) = 0;
  // dy: [batch, out] -> dx: [batch, in] (dx may be null when no input gradient is needed).
  // Parameter gradients go to the store's flat gradient buffer: overwritten when `accumulate`
  // is false (the first micro-batch of a step, so no zeroing pass is needed), else added to.
  virtual void backward(const float* x, const float* y, const float* dy, float* dx,
                        std::int64_t batch, bool accumulate) = 0;
};

}  // namespace lbt::nn
