// The seam between what a network computes and how (docs/DESIGN.md "Backends hide the math").
// A Backend makes the layers, each with its own convolution, elementwise and reduction kernels
// fused as its device likes, and provides the primitives the parts outside nn/ run on model
// buffers: allocation and copies, GEMM, the losses, and reductions. Models are built through
// it (Model::from_spec / from_layers take one), the trainer computes its loss through the
// model's backend, and the communicator reduces the gradient memory it hands out
// (Communicator::gradient_memory) on the same device. The CPU backend (nn/cpu/) is the only one:
// a second is a folder implementing this interface, with no edit to the model, the builder or
// the trainer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

// Where a backend's buffers live: host memory is all there is today.
enum class Device { kHost };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu"
  virtual Device device() const = 0;

  // ---- buffers: zeroed, 64-byte aligned, growing as AlignedBuffer does ----
  virtual AlignedBuffer allocate(std::size_t floats) const = 0;
  virtual void copy(std::span<const float> from, std::span<float> to) const = 0;

  // ---- GEMM on row-major matrices: C = alpha op(A) op(B) + beta C ----
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) const = 0;

  // ---- layers (model_builder.cpp asks for these; each throws ConfigError when it cannot fit
  //      its input) ----
  virtual std::unique_ptr<Layer> linear(std::int64_t in, std::int64_t out, InitScheme init,
                                        bool bias) const = 0;
  virtual std::unique_ptr<Layer> conv2d(Shape3 in, const Conv2dOptions& options,
                                        InitScheme init) const = 0;
  virtual std::unique_ptr<Layer> relu(std::int64_t features) const = 0;
  // relu: max(0, .) of the pool's output in the same pass
  virtual std::unique_ptr<Layer> max_pool(Shape3 in, std::int64_t kernel, std::int64_t stride,
                                          bool relu) const = 0;
  virtual std::unique_ptr<Layer> avg_pool(Shape3 in, std::int64_t kernel,
                                          std::int64_t stride) const = 0;
  virtual std::unique_ptr<Layer> global_avg_pool(Shape3 in) const = 0;
  virtual std::unique_ptr<Layer> batch_norm(Shape3 shape,
                                            const BatchNormOptions& options) const = 0;
  virtual std::unique_ptr<Layer> dropout(std::int64_t features, double p) const = 0;
  // He et al. 2016's basic residual block (two 3x3 convs with BatchNorm, projection shortcut
  // where the shape changes)
  virtual std::unique_ptr<Layer> residual(Shape3 in, std::int64_t out_channels, std::int64_t stride,
                                          InitScheme init) const = 0;

  // ---- losses: the sum over the batch; the gradient scaled by grad_scale (nn/cpu/loss.hpp) ----
  virtual double softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                       std::int64_t batch, std::int64_t classes, float* dlogits,
                                       float grad_scale, std::int64_t* correct) const = 0;
  virtual double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                                    std::int64_t dim, float* dpred, float grad_scale) const = 0;

  // ---- reductions over a buffer, accumulated in double ----
  virtual double sum_squares(std::span<const float> x) const = 0;
  virtual double dot(std::span<const float> x, std::span<const float> y) const = 0;
};

// The CPU backend (Eigen, OpenBLAS and lbt's own kernels; nn/cpu/).
const Backend& cpu_backend();

}  // namespace lbt::nn
