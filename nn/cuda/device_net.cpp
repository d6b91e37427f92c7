// DeviceNet: the CPU model's Conv2d, MaxPool2d, ReLU and Linear (nn/cpu/) with cuDNN, cuBLAS
// and mlp_kernels.hpp.
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

DeviceNet::DeviceNet(const lbt::cuda::Gpu& gpu, const std::vector<LayerSpec>& layers, Shape3 input,
                     std::int64_t max_batch, const std::vector<Segment>& segments,
                     std::size_t num_params)
    : gpu_(gpu), rows_(max_batch) {
  Shape3 shape = input;
  std::size_t next = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    Op op{};
    op.in = shape;
    if (l.type == "conv") {
      op.kind = Kind::kConv;
      op.conv = {l.out, l.kernel, l.stride, l.padding, l.bias};
      op.out = {l.out, (shape.h + 2 * l.padding - l.kernel) / l.stride + 1,
                (shape.w + 2 * l.padding - l.kernel) / l.stride + 1};
      op.weight = take_segment(segments, next, l.out * shape.c * l.kernel * l.kernel, i);
      if (l.bias) op.bias = take_segment(segments, next, l.out, i);
    } else if (l.type == "pool" && l.stride == l.kernel) {
      op.kind = Kind::kPool;
      op.kernel = l.kernel;
      op.out = {shape.c, shape.h / l.kernel, shape.w / l.kernel};
    } else if (l.type == "relu") {
      op.kind = Kind::kRelu;
      op.out = shape;
    } else if (l.type == "linear") {
      op.kind = Kind::kLinear;
      op.in = {shape.size(), 1, 1};
      op.out = {l.out, 1, 1};
      op.weight = take_segment(segments, next, l.out * shape.size(), i);
      if (l.bias) op.bias = take_segment(segments, next, l.out, i);
    } else {
      throw ConfigError(
          "the GPU runs conv, pool (stride = kernel), relu and linear layers; layer " +
          std::to_string(i) + " is " + l.type);
    }
    shape = op.out;
    op.y = DeviceArray<float>(static_cast<std::size_t>(max_batch * shape.size()));
    op.dy = DeviceArray<float>(static_cast<std::size_t>(max_batch * shape.size()));
    ops_.push_back(std::move(op));
  }
  if (ops_.empty() || ops_.back().kind != Kind::kLinear || next != segments.size())
    throw ConfigError("the GPU's network ends in a linear layer and uses every parameter");
  params_ = DeviceArray<float>(num_params);
  grads_ = DeviceArray<float>(num_params);
  ones_ = DeviceArray<float>(
      std::span<const float>(std::vector<float>(static_cast<std::size_t>(max_batch), 1.0f)));
}

CudnnConv2d& DeviceNet::conv_at(Op& op, std::int64_t batch) {
  std::unique_ptr<CudnnConv2d>& conv = op.convs[batch];
  if (!conv) conv = std::make_unique<CudnnConv2d>(op.in, op.conv, batch);
  return *conv;
}

void DeviceNet::forward_op(Op& op, const float* in, std::int64_t batch) {
  float* y = op.y.data();
  switch (op.kind) {
    case Kind::kConv:
      conv_at(op, batch).forward(in, params_.data() + op.weight,
                                 op.bias >= 0 ? params_.data() + op.bias : nullptr, y);
      return;
    case Kind::kPool:
      return max_pool_forward(in, y, batch * op.in.c, op.in.h, op.in.w, op.kernel);
    case Kind::kRelu:
      return relu_forward(in, y, batch * op.in.size());
    case Kind::kLinear: {
      const int B = static_cast<int>(batch), I = static_cast<int>(op.in.c),
                O = static_cast<int>(op.out.c);
      if (op.bias >= 0) broadcast_rows(params_.data() + op.bias, y, batch, O);
      gpu_.gemm(false, true, B, O, I, 1.0f, in, I, params_.data() + op.weight, I,
                op.bias >= 0 ? 1.0f : 0.0f, y, O);
      return;
    }
  }
}

const float* DeviceNet::forward(const float* x, std::int64_t batch) {
  const float* in = x;
  for (Op& op : ops_) {
    forward_op(op, in, batch);
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
      conv_at(op, batch).backward(in, params_.data() + op.weight, dy, dx, grads + op.weight,
                                  op.bias >= 0 ? grads + op.bias : nullptr, accumulate);
      return;
    case Kind::kPool:
      if (dx)
        max_pool_backward(in, op.y.data(), dy, dx, batch * op.in.c, op.in.h, op.in.w, op.kernel);
      return;
    case Kind::kRelu:
      if (dx) relu_backward(op.y.data(), dy, dx, batch * op.in.size());
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

}  // namespace lbt::nn::cuda
