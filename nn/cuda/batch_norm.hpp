// Batch normalisation on the GPU over NCHW activations, as the CPU's BatchNorm
// (nn/cpu/batch_norm.hpp): per channel, statistics over the batch and the H x W plane; train mode
// normalises with the batch's mean and biased variance and updates the running statistics
// (momentum 0.1, eps 1e-5, the unbiased variance), eval mode uses them. The per-channel
// arithmetic is nn/batch_norm_math.hpp's, the CPU's own; the sums over a channel's values run in
// double, per block and then in block order, so a run repeats bit for bit. No ReLU inside: the
// GPU's network applies it as a layer of its own (the same bits as the CPU's fused one).
#pragma once
#include <cstdint>

#include "core/cuda/gpu.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn::cuda {

class DeviceBatchNorm {
 public:
  DeviceBatchNorm(Shape3 shape, std::int64_t max_batch, BatchNormOptions options = {});

  // Device pointers throughout. x, y: [batch, C, H, W]; gamma, beta: [C]. Train mode needs
  // batch x H x W > 1 (a ConfigError otherwise, as on the CPU).
  void forward(const float* x, float* y, std::int64_t batch, bool train, const float* gamma,
               const float* beta);
  // Differentiates the last forward's mode; dgamma, dbeta written or, when `accumulate`, added
  // to; dx (may be null) written.
  void backward(const float* x, const float* dy, float* dx, std::int64_t batch, bool accumulate,
                const float* gamma, float* dgamma, float* dbeta);

  // The running statistics, in the CPU layer's buffers() order: mean, then variance.
  lbt::cuda::DeviceArray<float>& running_mean() { return running_mean_; }
  lbt::cuda::DeviceArray<float>& running_var() { return running_var_; }

 private:
  Shape3 shape_;
  BatchNormOptions opt_;
  lbt::cuda::DeviceArray<float> running_mean_, running_var_;
  // The last forward's map per channel (bn::ChannelMap: mean, inv_std, scale, shift, [C][4])
  // and the backward's coefficients (bn::GradCoefficients, [C][3]).
  lbt::cuda::DeviceArray<float> map_, grad_;
  lbt::cuda::DeviceArray<double> partials_;  // [C][blocks per channel][2]
  bool last_train_ = true;
};

// out[c] = the sum of x's channel c over the batch and the plane (x: [batch, C, HW]), in double
// as the BatchNorm's sums (a fixed order, the same bits every run), rounded to float; added to
// out when `accumulate`. A convolution's bias gradient: cuDNN's own (cudnnConvolutionBackwardBias)
// ran 32 or 64 blocks whatever the batch and took 0.70 ms of the simple CNN's 3.76 ms step at
// batch 512 on an H100 (2026-11-27, ncu). partials: channel_sum_partials(batch, C) doubles.
std::size_t channel_sum_partials(std::int64_t batch, std::int64_t C);
void channel_sums(const float* x, std::int64_t batch, std::int64_t C, std::int64_t HW,
                  double* partials, float* out, bool accumulate);

// Residual sums and pools of the GPU's ResNets (device_net.hpp); n elements, device pointers.
// y = max(a + b, 0), as the CPU's fused "bn2, add the shortcut, ReLU" (std::max(v, 0): a NaN
// stays a NaN).
void add_relu(const float* a, const float* b, float* y, std::int64_t n);
// y += x.
void add_into(const float* x, float* y, std::int64_t n);
// y[p] = (sum of plane p's values) / plane, summed in plane order: [planes, plane] -> [planes].
void global_avg_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t plane);
// dx[p, i] = dy[p] / plane.
void global_avg_pool_backward(const float* dy, float* dx, std::int64_t planes, std::int64_t plane);
// k x k windows side by side (stride k, no padding) over [planes, h, w]: the mean; and its
// backward (every input in a window gets dy / k^2; rows and columns past the last window 0).
void avg_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t h, std::int64_t w,
                      std::int64_t k);
void avg_pool_backward(const float* dy, float* dx, std::int64_t planes, std::int64_t h,
                       std::int64_t w, std::int64_t k);

}  // namespace lbt::nn::cuda
