// He et al. 2016's basic block (arXiv:1512.03385, Fig. 2) on the GPU, as the CPU's BasicBlock
// (nn/cpu/basic_block.hpp): y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the
// shortcut the identity or a 1x1 strided projection + BatchNorm. cuDNN's convolutions
// (cudnn_conv.hpp) and DeviceBatchNorm; each pass written out, where the CPU fuses them: the same
// values to float32 round-off (the sums run in another order), checked by lbt doctor.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/cudnn_conv.hpp"
#include "nn/shape.hpp"

namespace lbt::nn::cuda {

class DeviceBasicBlock {
 public:
  // params: where each parameter sits in the flat buffers, in the CPU block's order (conv1, bn1
  // gamma, beta, conv2, bn2 gamma, beta[, projection conv, gamma, beta]; device_net_plan.hpp).
  DeviceBasicBlock(Shape3 in, std::int64_t out_channels, std::int64_t stride,
                   std::int64_t max_batch, const std::vector<std::int64_t>& params);
  Shape3 out_shape() const { return out_; }
  // Device pointers; params and grads are the network's flat buffers.
  void forward(const float* x, float* y, std::int64_t batch, bool train, const float* params);
  // dx (may be null) written; the parameters' gradients written, or added to when `accumulate`.
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate, const float* params, float* grads);
  // The BatchNorms' running statistics in the CPU block's buffers() order.
  std::vector<lbt::cuda::DeviceArray<float>*> buffers();

 private:
  struct Offsets {
    std::int64_t conv1, bn1_gamma, bn1_beta, conv2, bn2_gamma, bn2_beta;
    std::int64_t proj_conv = -1, proj_gamma = -1, proj_beta = -1;  // -1: identity shortcut
  };
  Shape3 in_, out_;
  Offsets at_;
  CudnnConvByBatch conv1_, conv2_;
  DeviceBatchNorm bn1_, bn2_;
  std::unique_ptr<CudnnConvByBatch> proj_conv_;
  std::unique_ptr<DeviceBatchNorm> proj_bn_;
  // [max_batch, out]: conv1's output, relu(bn1), conv2's output, bn2's, the projection's conv
  // and BatchNorm outputs; gradients: dz = dy [y > 0] and two scratch; [max_batch, in]: the
  // projection's input gradient before it is added to dx.
  lbt::cuda::DeviceArray<float> a1_, r1_, a2_, b2_, sa_, sb_, gz_, g1_, g2_, gx_;
};

}  // namespace lbt::nn::cuda
