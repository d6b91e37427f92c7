// The seam between what a network computes and how (docs/DESIGN.md "Backends"). A Backend is
// a Device (buffers, copies, GEMM, reductions; core/device.hpp) that makes the layers, each
// with its own convolution, elementwise and reduction kernels fused as its device likes, and
// computes the losses. Models are built through it (Model::from_spec / from_layers take one)
// and allocate their parameters and gradients on it; the trainer computes its loss through the
// model's backend and hands it to the optimizer and the noise hooks, which allocate their state
// on it and refuse a device whose memory the host cannot read. The CPU backend (nn/cpu/) is the
// only one: a second is a folder implementing this interface, with no edit to the model, the
// builder or the trainer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/device.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

// A Device (core/device.hpp: buffers, copies, GEMM, reductions) that also makes layers and
// computes losses.
class Backend : public Device {
 public:
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
  // row_losses (may be null): each example's loss, [batch].
  virtual double softmax_cross_entropy(const float* logits, const std::int32_t* labels,
                                       std::int64_t batch, std::int64_t classes, float* dlogits,
                                       float grad_scale, std::int64_t* correct,
                                       double* row_losses = nullptr) const = 0;
  virtual double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                                    std::int64_t dim, float* dpred, float grad_scale) const = 0;
};

// The CPU backend (Eigen, OpenBLAS and lbt's own kernels; nn/cpu/).
const Backend& cpu_backend();

}  // namespace lbt::nn
