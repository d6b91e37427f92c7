// DeviceNet: the CPU model's Conv2d, MaxPool2d, AvgPool2d, GlobalAvgPool, ReLU, BatchNorm,
// BasicBlock and Linear (nn/cpu/) with cuDNN, cuBLAS, mlp_kernels.hpp and batch_norm.hpp.
#include "nn/cuda/device_net.hpp"

#include <string>

#include "core/error.hpp"
#include "nn/cuda/mlp_kernels.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::DeviceArray;

DeviceNet::Op DeviceNet::make_op(DeviceOpPlan plan, std::int64_t max_batch) {
  Op op;
  if (plan.kind == Kind::kConv) op.conv = std::make_unique<CudnnConvByBatch>(plan.in, plan.conv);
  if (plan.kind == Kind::kBatchNorm)
    op.norm = std::make_unique<DeviceBatchNorm>(plan.in, max_batch);
  if (plan.kind == Kind::kResidual)
    op.block = std::make_unique<DeviceBasicBlock>(plan.in, plan.out.c, plan.stride, max_batch,
                                                  plan.params);
  op.y = DeviceArray<float>(static_cast<std::size_t>(max_batch * plan.out.size()));
  op.dy = DeviceArray<float>(static_cast<std::size_t>(max_batch * plan.out.size()));
  op.plan = std::move(plan);
  return op;
}

DeviceNet::DeviceNet(const lbt::cuda::Gpu& gpu, const std::vector<LayerSpec>& layers, Shape3 input,
                     std::int64_t max_batch, const std::vector<Segment>& segments,
                     std::size_t num_params)
    : gpu_(gpu), rows_(max_batch) {
  for (DeviceOpPlan& plan : plan_device_net(layers, input, segments)) {
    labels_.push_back(std::to_string(ops_.size()) + " " + describe(plan));
    ops_.push_back(make_op(std::move(plan), max_batch));
  }
  params_ = DeviceArray<float>(num_params);
  grads_ = DeviceArray<float>(num_params);
  ones_ = DeviceArray<float>(
      std::span<const float>(std::vector<float>(static_cast<std::size_t>(max_batch), 1.0f)));
}

void DeviceNet::forward_op(Op& op, const float* in, std::int64_t batch, bool train) {
  float* y = op.y.data();
  const float* params = params_.data();
  switch (op.plan.kind) {
    case Kind::kConv:
      op.conv->at(batch).forward(in, params + op.plan.weight(),
                                 op.plan.bias() >= 0 ? params + op.plan.bias() : nullptr, y);
      return;
    case Kind::kMaxPool:
      return max_pool_forward(in, y, batch * op.plan.in.c, op.plan.in.h, op.plan.in.w,
                              op.plan.kernel);
    case Kind::kAvgPool:
      return avg_pool_forward(in, y, batch * op.plan.in.c, op.plan.in.h, op.plan.in.w,
                              op.plan.kernel);
    case Kind::kGlobalAvgPool:
      return global_avg_pool_forward(in, y, batch * op.plan.in.c, op.plan.in.plane());
    case Kind::kRelu:
      return relu_forward(in, y, batch * op.plan.in.size());
    case Kind::kBatchNorm:
      return op.norm->forward(in, y, batch, train, params + op.plan.weight(),
                              params + op.plan.bias());
    case Kind::kResidual:
      return op.block->forward(in, y, batch, train, params);
    case Kind::kLinear: {
      const int B = static_cast<int>(batch), I = static_cast<int>(op.plan.in.c),
                O = static_cast<int>(op.plan.out.c);
      if (op.plan.bias() >= 0) broadcast_rows(params + op.plan.bias(), y, batch, O);
      gpu_.gemm(false, true, B, O, I, 1.0f, in, I, params + op.plan.weight(), I,
                op.plan.bias() >= 0 ? 1.0f : 0.0f, y, O);
      return;
    }
  }
}

const float* DeviceNet::forward(const float* x, std::int64_t batch, bool train) {
  const float* in = x;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (timer_) timer_->begin();
    forward_op(ops_[i], in, batch, train);
    if (timer_) timer_->end(labels_[i] + " fwd");
    in = ops_[i].y.data();
  }
  return in;
}

void DeviceNet::loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) {
  Op& last = ops_.back();
  softmax_cross_entropy(last.y.data(), labels, batch, last.plan.out.c, last.dy.data(), grad_scale,
                        rows_.loss.data(), rows_.hit.data());
}

double DeviceNet::loss_sum(std::int64_t batch, std::int64_t* correct, double* squares) const {
  return rows_.sum(batch, correct, squares);
}

// op.dy holds d(loss)/d(op's output); writes the parameters' gradients and, where dx is not
// null, d(loss)/d(op's input).
void DeviceNet::backward_op(Op& op, const float* in, float* dx, std::int64_t batch,
                            bool accumulate) {
  const float* dy = op.dy.data();
  float* grads = grads_.data();
  switch (op.plan.kind) {
    case Kind::kConv:
      op.conv->at(batch).backward(
          in, params_.data() + op.plan.weight(), dy, dx, grads + op.plan.weight(),
          op.plan.bias() >= 0 ? grads + op.plan.bias() : nullptr, accumulate);
      return;
    case Kind::kMaxPool:
      if (dx)
        max_pool_backward(in, op.y.data(), dy, dx, batch * op.plan.in.c, op.plan.in.h, op.plan.in.w,
                          op.plan.kernel);
      return;
    case Kind::kAvgPool:
      if (dx)
        avg_pool_backward(dy, dx, batch * op.plan.in.c, op.plan.in.h, op.plan.in.w, op.plan.kernel);
      return;
    case Kind::kGlobalAvgPool:
      if (dx) global_avg_pool_backward(dy, dx, batch * op.plan.in.c, op.plan.in.plane());
      return;
    case Kind::kRelu:
      if (dx) relu_backward(op.y.data(), dy, dx, batch * op.plan.in.size());
      return;
    case Kind::kBatchNorm:
      op.norm->backward(in, dy, dx, batch, accumulate, params_.data() + op.plan.weight(),
                        grads + op.plan.weight(), grads + op.plan.bias());
      return;
    case Kind::kResidual:
      op.block->backward(in, op.y.data(), dy, dx, batch, accumulate, params_.data(), grads);
      return;
    case Kind::kLinear: {
      const int B = static_cast<int>(batch), I = static_cast<int>(op.plan.in.c),
                O = static_cast<int>(op.plan.out.c);
      const float beta = accumulate ? 1.0f : 0.0f;
      gpu_.gemm(true, false, O, I, B, 1.0f, dy, O, in, I, beta, grads + op.plan.weight(), I);
      if (op.plan.bias() >= 0)
        gpu_.gemm(false, false, 1, O, B, 1.0f, ones_.data(), B, dy, O, beta, grads + op.plan.bias(),
                  O);
      if (dx)
        gpu_.gemm(false, false, B, I, O, 1.0f, dy, O, params_.data() + op.plan.weight(), I, 0.0f,
                  dx, I);
      return;
    }
  }
}

void DeviceNet::backward(const float* x, std::int64_t batch, bool accumulate) {
  for (std::size_t i = ops_.size(); i-- > 0;) {
    const float* in = i == 0 ? x : ops_[i - 1].y.data();
    float* dx = i == 0 ? nullptr : ops_[i - 1].dy.data();
    if (timer_) timer_->begin();
    backward_op(ops_[i], in, dx, batch, accumulate);
    if (timer_) timer_->end(labels_[i] + " bwd");
  }
}

std::vector<DeviceArray<float>*> DeviceNet::buffers() {
  std::vector<DeviceArray<float>*> out;
  for (Op& op : ops_) {
    if (op.norm) out.insert(out.end(), {&op.norm->running_mean(), &op.norm->running_var()});
    if (op.block)
      for (DeviceArray<float>* b : op.block->buffers()) out.push_back(b);
  }
  return out;
}

std::vector<std::string> DeviceNet::conv_algorithms(std::int64_t batch) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].conv) {
      const CudnnConv2d& conv = ops_[i].conv->at(batch);
      const std::string ranking = conv.ranking();
      out.push_back(labels_[i] + ": " + conv.algorithms() +
                    (ranking.empty() ? "" : " (cuDNN ranked: " + ranking + ")"));
    }
  return out;
}

}  // namespace lbt::nn::cuda
