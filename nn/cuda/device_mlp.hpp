// An MLP (mlp:784-512-512-10: Linear layers with ReLU between) whose parameters, gradients and
// activations live on the GPU: cuBLAS GEMMs and our kernels, laid out exactly as the CPU Model's
// ParameterStore (per layer: weight [out, in] row-major, then bias [out]), so a CPU model's
// flat buffers copy across and the two backends can be compared op by op (lbt doctor). It is
// the GPU's first model, the one `lbt train` runs with model.device = "cuda" (trainer/cuda/).
#pragma once
#include <cstdint>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/params.hpp"
#include "nn/cuda/device_model.hpp"

namespace lbt::nn::cuda {

class DeviceMlp final : public DeviceModel {
 public:
  // dims: {784, 512, 512, 10}; buffers sized for batches up to max_batch.
  DeviceMlp(const lbt::cuda::Gpu& gpu, std::vector<std::int64_t> dims, std::int64_t max_batch);
  // The same in a CPU model's own layout: `segments` is its table (per layer weight then bias,
  // each tensor where the ParameterStore put it, padding included) over `num_params` floats.
  DeviceMlp(const lbt::cuda::Gpu& gpu, std::vector<std::int64_t> dims, std::int64_t max_batch,
            const std::vector<Segment>& segments, std::size_t num_params);

  std::size_t num_params() const { return params_.size(); }
  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  lbt::cuda::DeviceArray<float>& param_buffer() override { return params_; }

  // x: device [batch, dims[0]] -> device logits [batch, dims.back()], valid until the next call
  // (`train` changes nothing: an MLP has no BatchNorm).
  const float* forward(const float* x, std::int64_t batch, bool train = true) override;
  // Softmax cross-entropy of the last forward against device labels [batch]: per-row losses
  // (double) and hits stay on the device; d(loss)/d(logits) x grad_scale into the output grad.
  void loss(const std::int32_t* labels, std::int64_t batch, float grad_scale) override;
  // Sum of the last loss's rows, and its correct predictions (copies them to the host).
  double loss_sum(std::int64_t batch, std::int64_t* correct = nullptr,
                  double* squares = nullptr) const override;
  // Backpropagates the output grad into grads(): overwritten, or added to when `accumulate`
  // (gradient accumulation over micro-batches).
  void backward(const float* x, std::int64_t batch, bool accumulate = false) override;
  // The output grad the last loss wrote, [batch, classes] on the device.
  const float* output_grad() const { return acts_grad_.back().data(); }
  // Hidden layer l's ReLU output from the last forward, [batch, dims[l + 1]] on the device.
  const float* hidden_output(std::size_t l) const { return post_[l].data(); }
  // Linear layer l: its widths, and d(loss)/d(its output) from the last loss and backward,
  // [batch, out] on the device (the per-example noise sums read it).
  std::size_t num_layers() const { return layers_.size(); }
  std::int64_t layer_in(std::size_t l) const { return layers_[l].in; }
  std::int64_t layer_out(std::size_t l) const { return layers_[l].out; }
  const float* layer_output_grad(std::size_t l) const { return acts_grad_[l].data(); }

 private:
  struct Layer {
    std::int64_t in, out, weight, bias;  // offsets into the flat buffers
  };
  void allocate(const std::vector<std::int64_t>& dims, std::int64_t max_batch,
                std::size_t num_params);
  const lbt::cuda::Gpu& gpu_;
  std::vector<Layer> layers_;
  lbt::cuda::DeviceArray<float> params_, grads_;
  std::vector<lbt::cuda::DeviceArray<float>> pre_, post_, acts_grad_;  // per layer [max_batch, out]
  lbt::cuda::DeviceArray<float> input_grad_;                           // scratch for dx
  LossRows rows_;
  lbt::cuda::DeviceArray<float> ones_;  // [max_batch]: the bias gradient's 1^T dy
};

}  // namespace lbt::nn::cuda
