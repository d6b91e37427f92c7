// DeviceNet: the CPU model's Conv2d, MaxPool2d, AvgPool2d, GlobalAvgPool, ReLU, BatchNorm,
// BasicBlock and Linear (nn/cpu/) with cuDNN, cuBLAS, mlp_kernels.hpp and batch_norm.hpp.
#include "nn/cuda/device_net.hpp"

#include <string>

#include "core/error.hpp"
#include "nn/cuda/mlp_kernels.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::DeviceArray;

namespace {

// The next segment of the table, which must hold `size` floats.
std::int64_t take_segment(const std::vector<Segment>& segments, std::size_t& next,
                          std::int64_t size, std::size_t layer) {
  if (next >= segments.size() || segments[next].size != static_cast<std::size_t>(size))
    throw ConfigError("the GPU's layer " + std::to_string(layer) +
                      " does not fit the CPU model's parameter table");
  return static_cast<std::int64_t>(segments[next++].offset);
}

}  // namespace

DeviceNet::Op DeviceNet::make_op(const LayerSpec& l, std::size_t i, Shape3 shape,
                                 std::int64_t max_batch, const std::vector<Segment>& segments,
                                 std::size_t& next) {
  Op op{};
  op.in = shape;
  op.out = shape;
  auto take = [&](std::int64_t size) { return take_segment(segments, next, size, i); };
  const bool side_by_side = l.stride == l.kernel;  // pools: windows side by side
  if (l.type == "conv") {
    op.kind = Kind::kConv;
    op.conv = std::make_unique<CudnnConvByBatch>(
        shape, Conv2dOptions{l.out, l.kernel, l.stride, l.padding, l.bias});
    op.out = {l.out, (shape.h + 2 * l.padding - l.kernel) / l.stride + 1,
              (shape.w + 2 * l.padding - l.kernel) / l.stride + 1};
    op.weight = take(l.out * shape.c * l.kernel * l.kernel);
    if (l.bias) op.bias = take(l.out);
  } else if ((l.type == "pool" || l.type == "avgpool") && side_by_side) {
    op.kind = l.type == "pool" ? Kind::kMaxPool : Kind::kAvgPool;
    op.kernel = l.kernel;
    op.out = {shape.c, shape.h / l.kernel, shape.w / l.kernel};
  } else if (l.type == "global_avgpool") {
    op.kind = Kind::kGlobalAvgPool;
    op.out = {shape.c, 1, 1};
  } else if (l.type == "relu") {
    op.kind = Kind::kRelu;
  } else if (l.type == "batchnorm") {
    op.kind = Kind::kBatchNorm;
    op.norm = std::make_unique<DeviceBatchNorm>(shape, max_batch);
    op.weight = take(shape.c);
    op.bias = take(shape.c);
  } else if (l.type == "residual") {
    op.kind = Kind::kResidual;
    std::vector<std::int64_t> at;
    for (std::int64_t size : DeviceBasicBlock::param_sizes(shape, l.out, l.stride))
      at.push_back(take(size));
    DeviceBasicBlock::Offsets offsets{at[0], at[1], at[2], at[3], at[4], at[5]};
    if (at.size() == 9)
      offsets.proj_conv = at[6], offsets.proj_gamma = at[7], offsets.proj_beta = at[8];
    op.block = std::make_unique<DeviceBasicBlock>(shape, l.out, l.stride, max_batch, offsets);
    op.out = op.block->out_shape();
  } else if (l.type == "linear") {
    op.kind = Kind::kLinear;
    op.in = {shape.size(), 1, 1};
    op.out = {l.out, 1, 1};
    op.weight = take(l.out * shape.size());
    if (l.bias) op.bias = take(l.out);
  } else {
    throw ConfigError(
        "the GPU runs conv, pool and avgpool (stride = kernel), global_avgpool, relu, batchnorm, "
        "residual and linear layers; layer " +
        std::to_string(i) + " is " + l.type);
  }
  op.y = DeviceArray<float>(static_cast<std::size_t>(max_batch * op.out.size()));
  op.dy = DeviceArray<float>(static_cast<std::size_t>(max_batch * op.out.size()));
  return op;
}

DeviceNet::DeviceNet(const lbt::cuda::Gpu& gpu, const std::vector<LayerSpec>& layers, Shape3 input,
                     std::int64_t max_batch, const std::vector<Segment>& segments,
                     std::size_t num_params)
    : gpu_(gpu), rows_(max_batch) {
  Shape3 shape = input;
  std::size_t next = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    ops_.push_back(make_op(layers[i], i, shape, max_batch, segments, next));
    shape = ops_.back().out;
  }
  if (ops_.empty() || ops_.back().kind != Kind::kLinear || next != segments.size())
    throw ConfigError("the GPU's network ends in a linear layer and uses every parameter");
  params_ = DeviceArray<float>(num_params);
  grads_ = DeviceArray<float>(num_params);
  ones_ = DeviceArray<float>(
      std::span<const float>(std::vector<float>(static_cast<std::size_t>(max_batch), 1.0f)));
}

void DeviceNet::forward_op(Op& op, const float* in, std::int64_t batch, bool train) {
  float* y = op.y.data();
  const float* params = params_.data();
  switch (op.kind) {
    case Kind::kConv:
      op.conv->at(batch).forward(in, params + op.weight, op.bias >= 0 ? params + op.bias : nullptr,
                                 y);
      return;
    case Kind::kMaxPool:
      return max_pool_forward(in, y, batch * op.in.c, op.in.h, op.in.w, op.kernel);
    case Kind::kAvgPool:
      return avg_pool_forward(in, y, batch * op.in.c, op.in.h, op.in.w, op.kernel);
    case Kind::kGlobalAvgPool:
      return global_avg_pool_forward(in, y, batch * op.in.c, op.in.plane());
    case Kind::kRelu:
      return relu_forward(in, y, batch * op.in.size());
    case Kind::kBatchNorm:
      return op.norm->forward(in, y, batch, train, params + op.weight, params + op.bias);
    case Kind::kResidual:
      return op.block->forward(in, y, batch, train, params);
    case Kind::kLinear: {
      const int B = static_cast<int>(batch), I = static_cast<int>(op.in.c),
                O = static_cast<int>(op.out.c);
      if (op.bias >= 0) broadcast_rows(params + op.bias, y, batch, O);
      gpu_.gemm(false, true, B, O, I, 1.0f, in, I, params + op.weight, I,
                op.bias >= 0 ? 1.0f : 0.0f, y, O);
      return;
    }
  }
}

const float* DeviceNet::forward(const float* x, std::int64_t batch, bool train) {
  const float* in = x;
  for (Op& op : ops_) {
    forward_op(op, in, batch, train);
    in = op.y.data();
  }
  return in;
}

void DeviceNet::loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) {
  Op& last = ops_.back();
  softmax_cross_entropy(last.y.data(), labels, batch, last.out.c, last.dy.data(), grad_scale,
                        rows_.loss.data(), rows_.hit.data());
}

double DeviceNet::loss_sum(std::int64_t batch, std::int64_t* correct) const {
  return rows_.sum(batch, correct);
}

// op.dy holds d(loss)/d(op's output); writes the parameters' gradients and, where dx is not
// null, d(loss)/d(op's input).
void DeviceNet::backward_op(Op& op, const float* in, float* dx, std::int64_t batch,
                            bool accumulate) {
  const float* dy = op.dy.data();
  float* grads = grads_.data();
  switch (op.kind) {
    case Kind::kConv:
      op.conv->at(batch).backward(in, params_.data() + op.weight, dy, dx, grads + op.weight,
                                  op.bias >= 0 ? grads + op.bias : nullptr, accumulate);
      return;
    case Kind::kMaxPool:
      if (dx)
        max_pool_backward(in, op.y.data(), dy, dx, batch * op.in.c, op.in.h, op.in.w, op.kernel);
      return;
    case Kind::kAvgPool:
      if (dx) avg_pool_backward(dy, dx, batch * op.in.c, op.in.h, op.in.w, op.kernel);
      return;
    case Kind::kGlobalAvgPool:
      if (dx) global_avg_pool_backward(dy, dx, batch * op.in.c, op.in.plane());
      return;
    case Kind::kRelu:
      if (dx) relu_backward(op.y.data(), dy, dx, batch * op.in.size());
      return;
    case Kind::kBatchNorm:
      op.norm->backward(in, dy, dx, batch, accumulate, params_.data() + op.weight,
                        grads + op.weight, grads + op.bias);
      return;
    case Kind::kResidual:
      op.block->backward(in, op.y.data(), dy, dx, batch, accumulate, params_.data(), grads);
      return;
    case Kind::kLinear: {
      const int B = static_cast<int>(batch), I = static_cast<int>(op.in.c),
                O = static_cast<int>(op.out.c);
      const float beta = accumulate ? 1.0f : 0.0f;
      gpu_.gemm(true, false, O, I, B, 1.0f, dy, O, in, I, beta, grads + op.weight, I);
      if (op.bias >= 0)
        gpu_.gemm(false, false, 1, O, B, 1.0f, ones_.data(), B, dy, O, beta, grads + op.bias, O);
      if (dx)
        gpu_.gemm(false, false, B, I, O, 1.0f, dy, O, params_.data() + op.weight, I, 0.0f, dx, I);
      return;
    }
  }
}

void DeviceNet::backward(const float* x, std::int64_t batch, bool accumulate) {
  for (std::size_t i = ops_.size(); i-- > 0;) {
    const float* in = i == 0 ? x : ops_[i - 1].y.data();
    float* dx = i == 0 ? nullptr : ops_[i - 1].dy.data();
    backward_op(ops_[i], in, dx, batch, accumulate);
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

}  // namespace lbt::nn::cuda
