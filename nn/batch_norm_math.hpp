// BatchNorm's per-channel arithmetic (Ioffe & Szegedy 2015, arXiv:1502.03167, Alg. 1 and its
// backward; PyTorch's running statistics), written once for both backends: the CPU's layer
// (cpu/batch_norm.cpp) and the GPU's (cuda/batch_norm.cu) call these with their own sums over
// the channel's batch x H x W values, so the CPU's tests against PyTorch cover the GPU's
// statistics, running averages, affine map and gradient coefficients. On x86-64 neither compiler
// contracts a product and a sum here (lbt_nn's portable files are built without FMA; nvcc
// --fmad=false), so the per-channel values agree bit for bit given the same sums; the fused
// multiply-adds are the explicit fmaf's. (aarch64's g++ may contract: FMA is its baseline.)
#pragma once
#include <cstdint>

#include "core/host_device.hpp"

namespace lbt::nn::bn {

// The channel's map y = fmaf(x, scale, shift), from its mean and 1 / sqrt(var + eps).
struct ChannelMap {
  float mean, inv_std, scale, shift;
};

LBT_HOST_DEVICE inline ChannelMap affine_map(float mean, float inv_std, float gamma, float beta) {
  const float scale = gamma * inv_std;
  return {mean, inv_std, scale, beta - mean * scale};
}

// Train mode, from the sums of d = x - k and of d^2 over the channel's m values, k one of them
// (the shifted-data algorithm: var = E[d^2] - E[d]^2 cancels only about (mean - k)^2 / var);
// running statistics r = (1 - momentum) r + momentum s with the unbiased variance.
LBT_HOST_DEVICE inline ChannelMap train_map(double sum_d, double sum_d2, float k, std::int64_t m,
                                            double momentum, double eps, float gamma, float beta,
                                            float& running_mean, float& running_var) {
  const double count = static_cast<double>(m);
  const double mean_d = sum_d / count, sq = sum_d2 / count;
  const double spread = sq - mean_d * mean_d;
  const double var = spread > 0.0 ? spread : 0.0;
  const float mean = static_cast<float>(k + mean_d);
  const float inv_std = static_cast<float>(1.0 / sqrt(var + eps));
  running_mean = static_cast<float>((1.0 - momentum) * running_mean + momentum * mean);
  running_var = static_cast<float>((1.0 - momentum) * running_var +
                                   momentum * var * count / static_cast<double>(m - 1));
  return affine_map(mean, inv_std, gamma, beta);
}

// Eval mode: the running statistics.
LBT_HOST_DEVICE inline ChannelMap eval_map(float running_mean, float running_var, double eps,
                                           float gamma, float beta) {
  const float inv_std = static_cast<float>(1.0 / sqrt(static_cast<double>(running_var) + eps));
  return affine_map(running_mean, inv_std, gamma, beta);
}

// The backward's dx = k (dy - a - (x - mean) b): k = gamma inv_std, and in train mode a =
// mean(dy), b = mean(dy x_hat) inv_std (through the batch statistics); a = b = 0 in eval mode,
// where the statistics are constants.
struct GradCoefficients {
  float k, a, b;
};

// From the sums of dy and of dy (x - mean) over the channel's m values; writes d gamma =
// sum dy x_hat and d beta = sum dy (added to them when `accumulate`).
LBT_HOST_DEVICE inline GradCoefficients grad_coefficients(double sum_dy, double sum_dy_centred,
                                                          const ChannelMap& map, float gamma,
                                                          std::int64_t m, bool train,
                                                          bool accumulate, float& dgamma,
                                                          float& dbeta) {
  const double sum_dy_xhat = sum_dy_centred * map.inv_std;
  dgamma = static_cast<float>(accumulate ? dgamma + sum_dy_xhat : sum_dy_xhat);
  dbeta = static_cast<float>(accumulate ? dbeta + sum_dy : sum_dy);
  const double count = static_cast<double>(m);
  return {gamma * map.inv_std, train ? static_cast<float>(sum_dy / count) : 0.0f,
          train ? static_cast<float>(sum_dy_xhat / count) * map.inv_std : 0.0f};
}

LBT_HOST_DEVICE inline float input_grad(float x, float dy, const GradCoefficients& g, float mean) {
  return g.k * fmaf(mean - x, g.b, dy - g.a);
}

}  // namespace lbt::nn::bn
