// DeviceBasicBlock; see basic_block.hpp. Backward, with z = bn2(a2) + shortcut(x), y = relu(z):
//   dz = dy [y > 0]; bn2 -> conv2 -> relu -> bn1 -> conv1 into dx; then dx += dz (identity) or
//   dx += conv_s^T bn_s^T dz (projection), in the order the CPU block adds them.
#include "nn/cuda/basic_block.hpp"

#include "core/error.hpp"
#include "nn/cuda/mlp_kernels.hpp"

namespace lbt::nn::cuda {

namespace {

Conv2dOptions conv3x3(std::int64_t out_channels, std::int64_t stride) {
  return {.out_channels = out_channels, .kernel = 3, .stride = stride, .padding = 1, .bias = false};
}

Conv2dOptions projection(std::int64_t out_channels, std::int64_t stride) {
  return {.out_channels = out_channels, .kernel = 1, .stride = stride, .padding = 0, .bias = false};
}

bool needs_projection(Shape3 in, std::int64_t out_channels, std::int64_t stride) {
  return stride != 1 || in.c != out_channels;
}

lbt::cuda::DeviceArray<float> activations(std::int64_t batch, Shape3 shape) {
  return lbt::cuda::DeviceArray<float>(static_cast<std::size_t>(batch * shape.size()));
}

}  // namespace

DeviceBasicBlock::DeviceBasicBlock(Shape3 in, std::int64_t out_channels, std::int64_t stride,
                                   std::int64_t max_batch, const std::vector<std::int64_t>& params)
    : in_(in),
      out_{out_channels, (in.h - 1) / stride + 1, (in.w - 1) / stride + 1},
      at_{params.at(0), params.at(1), params.at(2), params.at(3), params.at(4), params.at(5)},
      conv1_(in, conv3x3(out_channels, stride)),
      conv2_(out_, conv3x3(out_channels, 1)),
      bn1_(out_, max_batch),
      bn2_(out_, max_batch) {
  for (auto* a : {&a1_, &r1_, &a2_, &b2_, &gz_, &g1_, &g2_}) *a = activations(max_batch, out_);
  if (needs_projection(in, out_channels, stride) != (params.size() == 9))
    throw Error("a basic block's parameters do not fit its shapes");
  if (needs_projection(in, out_channels, stride)) {
    at_.proj_conv = params[6], at_.proj_gamma = params[7], at_.proj_beta = params[8];
    proj_conv_ = std::make_unique<CudnnConvByBatch>(in, projection(out_channels, stride));
    proj_bn_ = std::make_unique<DeviceBatchNorm>(out_, max_batch);
    sa_ = activations(max_batch, out_);
    sb_ = activations(max_batch, out_);
    gx_ = activations(max_batch, in);
  }
}

void DeviceBasicBlock::forward(const float* x, float* y, std::int64_t batch, bool train,
                               const float* params) {
  const std::int64_t n = batch * out_.size();
  conv1_.at(batch).forward(x, params + at_.conv1, nullptr, a1_.data());
  bn1_.forward(a1_.data(), r1_.data(), batch, train, params + at_.bn1_gamma, params + at_.bn1_beta);
  relu_forward(r1_.data(), r1_.data(), n);
  conv2_.at(batch).forward(r1_.data(), params + at_.conv2, nullptr, a2_.data());
  bn2_.forward(a2_.data(), b2_.data(), batch, train, params + at_.bn2_gamma, params + at_.bn2_beta);
  if (!proj_conv_) return add_relu(b2_.data(), x, y, n);
  proj_conv_->at(batch).forward(x, params + at_.proj_conv, nullptr, sa_.data());
  proj_bn_->forward(sa_.data(), sb_.data(), batch, train, params + at_.proj_gamma,
                    params + at_.proj_beta);
  add_relu(b2_.data(), sb_.data(), y, n);
}

void DeviceBasicBlock::backward(const float* x, const float* y, const float* dy, float* dx,
                                std::int64_t batch, bool accumulate, const float* params,
                                float* grads) {
  const std::int64_t n = batch * out_.size(), n_in = batch * in_.size();
  relu_backward(y, dy, gz_.data(), n);
  bn2_.backward(a2_.data(), gz_.data(), g1_.data(), batch, accumulate, params + at_.bn2_gamma,
                grads + at_.bn2_gamma, grads + at_.bn2_beta);
  conv2_.at(batch).backward(r1_.data(), params + at_.conv2, g1_.data(), g2_.data(),
                            grads + at_.conv2, nullptr, accumulate);
  relu_backward(r1_.data(), g2_.data(), g2_.data(), n);
  bn1_.backward(a1_.data(), g2_.data(), g1_.data(), batch, accumulate, params + at_.bn1_gamma,
                grads + at_.bn1_gamma, grads + at_.bn1_beta);
  conv1_.at(batch).backward(x, params + at_.conv1, g1_.data(), dx, grads + at_.conv1, nullptr,
                            accumulate);
  if (!proj_conv_) {
    if (dx) add_into(gz_.data(), dx, n_in);
    return;
  }
  proj_bn_->backward(sa_.data(), gz_.data(), g1_.data(), batch, accumulate, params + at_.proj_gamma,
                     grads + at_.proj_gamma, grads + at_.proj_beta);
  proj_conv_->at(batch).backward(x, params + at_.proj_conv, g1_.data(), dx ? gx_.data() : nullptr,
                                 grads + at_.proj_conv, nullptr, accumulate);
  if (dx) add_into(gx_.data(), dx, n_in);
}

std::vector<lbt::cuda::DeviceArray<float>*> DeviceBasicBlock::buffers() {
  std::vector<lbt::cuda::DeviceArray<float>*> out{&bn1_.running_mean(), &bn1_.running_var(),
                                                  &bn2_.running_mean(), &bn2_.running_var()};
  if (proj_bn_) out.insert(out.end(), {&proj_bn_->running_mean(), &proj_bn_->running_var()});
  return out;
}

}  // namespace lbt::nn::cuda
