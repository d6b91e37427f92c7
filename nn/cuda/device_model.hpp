// A model whose parameters, gradients and activations live on the GPU, in the CPU model's flat
// layout (its ParameterStore's segment table), so a CPU model's buffers copy across: the MLP
// (device_mlp.hpp) and the convolutional stack (device_net.hpp). The trainer's GPU step
// (trainer/cuda/) runs either through this.
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/cuda/gpu.hpp"

namespace lbt::nn::cuda {

// A batch's softmax cross-entropy per row on the device (loss in double, argmax hit), and their
// sums on the host: what both models' loss() writes and loss_sum() reads.
struct LossRows {
  explicit LossRows(std::int64_t max_batch)
      : loss(static_cast<std::size_t>(max_batch)), hit(static_cast<std::size_t>(max_batch)) {}
  double sum(std::int64_t batch, std::int64_t* correct, double* squares) const {
    const std::vector<double> rows = loss.download();
    const std::vector<std::int32_t> hits = hit.download();
    if (correct) *correct = std::accumulate(hits.begin(), hits.begin() + batch, std::int64_t{0});
    if (squares)
      *squares = std::inner_product(rows.begin(), rows.begin() + batch, rows.begin(), 0.0);
    return std::accumulate(rows.begin(), rows.begin() + batch, 0.0);
  }
  lbt::cuda::DeviceArray<double> loss;
  lbt::cuda::DeviceArray<std::int32_t> hit;
};

class DeviceModel {
 public:
  virtual ~DeviceModel() = default;
  virtual float* params() = 0;
  virtual float* grads() = 0;
  // The parameters' buffer itself: a caller may swap another of the same size in (the weights'
  // EMA for an evaluation) and back.
  virtual lbt::cuda::DeviceArray<float>& param_buffer() = 0;
  // x: device [batch, features] -> device logits [batch, classes], valid until the next call.
  // `train`: batch statistics in the BatchNorms (running ones updated), else the running ones.
  virtual const float* forward(const float* x, std::int64_t batch, bool train) = 0;
  // Softmax cross-entropy of the last forward against device labels [batch]: per-row losses
  // (double) and hits stay on the device; d(loss)/d(logits) x grad_scale into the output grad.
  virtual void loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) = 0;
  // Sum of the last loss's rows, its correct predictions and (where `squares` is not null) the
  // sum of the rows squared (copies them to the host).
  virtual double loss_sum(std::int64_t batch, std::int64_t* correct,
                          double* squares = nullptr) const = 0;
  // Backpropagates the output grad into grads(): overwritten, or added to when `accumulate`.
  virtual void backward(const float* x, std::int64_t batch, bool accumulate) = 0;
  // The layers' buffers (BatchNorms' running statistics) in the CPU model's buffers() order.
  virtual std::vector<lbt::cuda::DeviceArray<float>*> buffers() { return {}; }
};

}  // namespace lbt::nn::cuda
