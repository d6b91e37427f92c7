// A stack of convolutions (cuDNN), pools, ReLUs, BatchNorms, residual blocks and Linear layers on
// the GPU, in the CPU model's parameter layout: what model.device = "cuda" trains when the model
// is not a plain MLP (cnn:simple, Shallue et al. 2018's; resnet:N, He et al. 2016's; or such
// layers as [[model.layers]]). Pools take windows side by side (stride = kernel) so their
// backward needs no atomics; convolutions run cuDNN's deterministic algorithms (cudnn_conv.hpp)
// and BatchNorms sum in a fixed order (batch_norm.hpp), so a run repeats bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/cuda/op_timer.hpp"
#include "core/params.hpp"
#include "nn/cuda/basic_block.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/cudnn_conv.hpp"
#include "nn/cuda/device_model.hpp"
#include "nn/device_net_plan.hpp"
#include "nn/layer_spec.hpp"
#include "nn/shape.hpp"

namespace lbt::nn::cuda {

class DeviceNet final : public DeviceModel {
 public:
  // layers: conv, pool and avgpool (stride = kernel), global_avgpool, relu, batchnorm, residual
  // and linear, flattening before the first linear;
  // input: one example's [C, H, W]; segments: the CPU model's table over num_params floats.
  // Throws ConfigError for a layer it cannot run.
  DeviceNet(const lbt::cuda::Gpu& gpu, const std::vector<LayerSpec>& layers, Shape3 input,
            std::int64_t max_batch, const std::vector<Segment>& segments, std::size_t num_params);

  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  lbt::cuda::DeviceArray<float>& param_buffer() override { return params_; }
  const float* forward(const float* x, std::int64_t batch, bool train) override;
  void loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) override;
  double loss_sum(std::int64_t batch, std::int64_t* correct,
                  double* squares = nullptr) const override;
  void backward(const float* x, std::int64_t batch, bool accumulate) override;
  std::vector<lbt::cuda::DeviceArray<float>*> buffers() override;

  // With a timer, each op's forward and backward is timed on the stream under "LABEL fwd" and
  // "LABEL bwd", LABEL its index and describe(plan): where a step's GPU time goes
  // (bench/gpu_layer_times.cpp). nullptr (the default) times nothing.
  void time_ops(lbt::cuda::OpTimer* timer) { timer_ = timer; }
  // Each convolution op's cuDNN algorithms at `batch` ("0 conv 1->32 5x5 on 28x28: fwd 0, bwd
  // data 1, bwd filter 1"): what LBT_CUDNN_ALGOS chose (made at a batch's first use), and
  // unless fixed, cuDNN's ranking it chose from (CudnnConv2d::ranking).
  std::vector<std::string> conv_algorithms(std::int64_t batch);

 private:
  using Kind = DeviceOpKind;
  struct Op {
    DeviceOpPlan plan;                    // kind, shapes, parameter offsets (device_net_plan.hpp)
    lbt::cuda::DeviceArray<float> y, dy;  // [max_batch, out.size()]
    std::unique_ptr<CudnnConvByBatch> conv;
    std::unique_ptr<DeviceBatchNorm> norm;  // plan.weight(), bias(): its gamma, beta
    std::unique_ptr<DeviceBasicBlock> block;
  };
  static Op make_op(DeviceOpPlan plan, std::int64_t max_batch);
  void forward_op(Op& op, const float* in, std::int64_t batch, bool train);
  void backward_op(Op& op, const float* in, float* dx, std::int64_t batch, bool accumulate);

  const lbt::cuda::Gpu& gpu_;
  std::vector<Op> ops_;
  lbt::cuda::DeviceArray<float> params_, grads_;
  LossRows rows_;
  lbt::cuda::DeviceArray<float> ones_;  // [max_batch]: a Linear bias gradient's 1^T dy
  lbt::cuda::OpTimer* timer_ = nullptr;
  std::vector<std::string> labels_;  // per op: its index and describe(plan)
};

}  // namespace lbt::nn::cuda
