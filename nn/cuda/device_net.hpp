// A stack of convolutions (cuDNN), max pools, ReLUs and Linear layers on the GPU, in the CPU
// model's parameter layout: what model.device = "cuda" trains when the model is not a plain MLP
// (cnn:simple, Shallue et al. 2018's, or the same layers as [[model.layers]]). Pools take
// windows side by side (stride = kernel) so their backward needs no atomics; convolutions run
// cuDNN's deterministic algorithms (cudnn_conv.hpp), so a run repeats bit for bit.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/params.hpp"
#include "nn/cuda/cudnn_conv.hpp"
#include "nn/cuda/device_model.hpp"
#include "nn/layer_spec.hpp"
#include "nn/shape.hpp"

namespace lbt::nn::cuda {

class DeviceNet final : public DeviceModel {
 public:
  // layers: conv, pool (stride = kernel), relu and linear, flattening before the first linear;
  // input: one example's [C, H, W]; segments: the CPU model's table over num_params floats.
  // Throws ConfigError for a layer it cannot run.
  DeviceNet(const lbt::cuda::Gpu& gpu, const std::vector<LayerSpec>& layers, Shape3 input,
            std::int64_t max_batch, const std::vector<Segment>& segments, std::size_t num_params);

  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  lbt::cuda::DeviceArray<float>& param_buffer() override { return params_; }
  const float* forward(const float* x, std::int64_t batch) override;
  void loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) override;
  double loss_sum(std::int64_t batch, std::int64_t* correct) const override;
  void backward(const float* x, std::int64_t batch, bool accumulate) override;

 private:
  enum class Kind { kConv, kPool, kRelu, kLinear };
  struct Op {
    Kind kind;
    Shape3 in, out;  // a Linear's: {features, 1, 1}
    std::int64_t kernel = 0;
    Conv2dOptions conv;
    std::int64_t weight = -1, bias = -1;  // offsets into the flat buffers; -1: none
    lbt::cuda::DeviceArray<float> y, dy;  // [max_batch, out.size()]
    std::map<std::int64_t, std::unique_ptr<CudnnConv2d>> convs;  // cuDNN's descriptors per batch
  };
  CudnnConv2d& conv_at(Op& op, std::int64_t batch);
  void forward_op(Op& op, const float* in, std::int64_t batch);
  void backward_op(Op& op, const float* in, float* dx, std::int64_t batch, bool accumulate);

  const lbt::cuda::Gpu& gpu_;
  std::vector<Op> ops_;
  lbt::cuda::DeviceArray<float> params_, grads_;
  LossRows rows_;
  lbt::cuda::DeviceArray<float> ones_;  // [max_batch]: a Linear bias gradient's 1^T dy
};

}  // namespace lbt::nn::cuda
