// DeviceMlp: the CPU Model's Linear/ReLU stack (nn/cpu/linear.cpp, relu.cpp, loss.cpp) with
// cuBLAS GEMMs and mlp_kernels.hpp.
#include "nn/cuda/device_mlp.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "nn/cuda/mlp_kernels.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::DeviceArray;

DeviceMlp::DeviceMlp(const lbt::cuda::Gpu& gpu, std::vector<std::int64_t> dims,
                     std::int64_t max_batch)
    : gpu_(gpu), rows_(max_batch) {
  if (dims.size() < 2) throw ConfigError("an MLP needs at least an input and an output width");
  std::int64_t offset = 0;
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    const Layer layer{dims[l], dims[l + 1], offset, offset + dims[l] * dims[l + 1]};
    layers_.push_back(layer);
    offset = layer.bias + layer.out;
  }
  allocate(dims, max_batch, static_cast<std::size_t>(offset));
}

DeviceMlp::DeviceMlp(const lbt::cuda::Gpu& gpu, std::vector<std::int64_t> dims,
                     std::int64_t max_batch, const std::vector<Segment>& segments,
                     std::size_t num_params)
    : gpu_(gpu), rows_(max_batch) {
  if (dims.size() < 2 || segments.size() != 2 * (dims.size() - 1))
    throw ConfigError("an MLP's segment table has a weight and a bias per layer");
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    const Segment& w = segments[2 * l];
    const Segment& b = segments[2 * l + 1];
    if (w.size != static_cast<std::size_t>(dims[l] * dims[l + 1]) ||
        b.size != static_cast<std::size_t>(dims[l + 1]))
      throw ConfigError("segment " + w.name + " or " + b.name + " does not fit layer " +
                        std::to_string(l) + " of the MLP");
    layers_.push_back({dims[l], dims[l + 1], static_cast<std::int64_t>(w.offset),
                       static_cast<std::int64_t>(b.offset)});
  }
  allocate(dims, max_batch, num_params);
}

void DeviceMlp::allocate(const std::vector<std::int64_t>& dims, std::int64_t max_batch,
                         std::size_t num_params) {
  for (const Layer& layer : layers_) {
    const auto size = static_cast<std::size_t>(max_batch * layer.out);
    pre_.emplace_back(size);
    post_.emplace_back(size);
    acts_grad_.emplace_back(size);
  }
  params_ = DeviceArray<float>(num_params);
  grads_ = DeviceArray<float>(num_params);
  const std::int64_t widest = *std::max_element(dims.begin(), dims.end());
  input_grad_ = DeviceArray<float>(static_cast<std::size_t>(max_batch * widest));
  ones_ = DeviceArray<float>(
      std::span<const float>(std::vector<float>(static_cast<std::size_t>(max_batch), 1.0f)));
}

// Per layer y = b (broadcast), y += x W^T; ReLU between layers (post_), none after the last.
const float* DeviceMlp::forward(const float* x, std::int64_t batch, bool) {
  const float* in = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    float* y = pre_[l].data();
    broadcast_rows(params_.data() + L.bias, y, batch, L.out);
    gpu_.gemm(false, true, static_cast<int>(batch), static_cast<int>(L.out), static_cast<int>(L.in),
              1.0f, in, static_cast<int>(L.in), params_.data() + L.weight, static_cast<int>(L.in),
              1.0f, y, static_cast<int>(L.out));
    if (l + 1 == layers_.size()) return y;
    relu_forward(y, post_[l].data(), batch * L.out);
    in = post_[l].data();
  }
  return in;
}

void DeviceMlp::loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) {
  const Layer& last = layers_.back();
  softmax_cross_entropy(pre_.back().data(), labels, batch, last.out, acts_grad_.back().data(),
                        grad_scale, rows_.loss.data(), rows_.hit.data());
}

double DeviceMlp::loss_sum(std::int64_t batch, std::int64_t* correct, double* squares) const {
  return rows_.sum(batch, correct, squares);
}

// Last layer first: dW = dy^T x, db = column sums of dy, dx = dy W; through the ReLU below it
// the gradient of its input is dx where its output is positive.
void DeviceMlp::backward(const float* x, std::int64_t batch, bool accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const Layer& L = layers_[l];
    const float* dy = acts_grad_[l].data();
    const float* in = l == 0 ? x : post_[l - 1].data();
    const int B = static_cast<int>(batch), I = static_cast<int>(L.in), O = static_cast<int>(L.out);
    gpu_.gemm(true, false, O, I, B, 1.0f, dy, O, in, I, beta, grads_.data() + L.weight, I);
    // db = 1^T dy as a GEMM: one thread per column was 10 threads reading 8192 rows each for
    // the last layer at batch 8192, most of the step.
    gpu_.gemm(false, false, 1, O, B, 1.0f, ones_.data(), B, dy, O, beta, grads_.data() + L.bias, O);
    if (l == 0) return;
    gpu_.gemm(false, false, B, I, O, 1.0f, dy, O, params_.data() + L.weight, I, 0.0f,
              input_grad_.data(), I);
    relu_backward(post_[l - 1].data(), input_grad_.data(), acts_grad_[l - 1].data(), batch * L.in);
  }
}

}  // namespace lbt::nn::cuda
