// Batch normalisation (Ioffe & Szegedy 2015, arXiv:1502.03167, Alg. 1 and 2) over NCHW
// activations: per channel c, statistics over the batch and the H x W plane; a [C] input with
// H = W = 1 is BatchNorm1d. Train mode normalises with the micro-batch's mean and biased
// variance and updates running statistics, r = (1 - momentum) r + momentum s, with the
// unbiased variance (PyTorch's convention, momentum 0.1, eps 1e-5); eval mode uses them.
// In data-parallel runs each rank normalises over its own micro-batch, as PyTorch's
// non-synchronised BatchNorm does: statistics are not allreduced, so results depend on the
// micro-batch size, and each rank's running statistics drift apart (rank 0's are kept).
#pragma once
#include <vector>

#include "core/tensor.hpp"
#include "nn/cpu/channels_last.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(Shape3 shape, BatchNormOptions options = {});
  std::string describe() const override;
  std::int64_t in_features() const override { return shape_.size(); }
  std::int64_t out_features() const override { return shape_.size(); }
  Shape3 out_shape() const override { return shape_; }
  const char* param_prefix() const override { return "bn"; }
  bool couples_examples() const override { return true; }
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const override;
  void register_params(ParameterStore& store, const std::string& prefix) override;
  void bind(ParameterStore& store) override;
  void init(Rng& rng) override;  // gamma = 1, beta = 0; running mean 0, variance 1
  std::vector<std::span<float>> buffers() override { return {running_mean_, running_var_}; }
  // x: [batch, C, H, W] -> y: same shape. Train mode needs batch * H * W > 1.
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  // y = max(bn(x) + residual, 0) (residual may be null; relu false: no max) in the pass that
  // writes y: a residual block's "bn, add the shortcut, relu" without two more passes. With
  // residual_map (ChannelAffine, no ReLU), the residual is read through it: a projection
  // shortcut's own BatchNorm, applied here instead of in a pass of its own.
  // backward_masked differentiates it (backward() alone is bn's own, without the ReLU).
  // x_moments (may be null): x's per-plane moments, [batch][3][C], from the layer that wrote x
  // (Conv2d::forward_with_moments); train mode then takes its statistics from them instead of
  // a pass over x.
  void forward_fused(const float* x, float* y, std::int64_t batch, bool train,
                     const float* residual, bool relu, const ChannelAffine* residual_map = nullptr,
                     const float* x_moments = nullptr);
  // Differentiates the mode of the last forward (train: through the batch statistics), and
  // with options.relu the ReLU too (the mask from x and the last forward's statistics).
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;

  // forward() without writing y: the statistics (train: the batch's, running ones updated;
  // eval: the running ones), hence the map y = affine()(x), for a layer that applies it as it
  // reads x (Conv2d::forward_affine). backward() then differentiates it as usual.
  void forward_statistics(const float* x, std::int64_t batch, bool train,
                          const float* x_moments = nullptr);
  // forward() in train mode with the statistics from x's per-plane moments (forward_fused).
  void forward_with_moments(const float* x, float* y, std::int64_t batch, const float* x_moments) {
    forward_fused(x, y, batch, true, nullptr, opt_.relu, nullptr, x_moments);
  }
  ChannelAffine affine() const { return {scale_.data(), shift_.data(), opt_.relu}; }

  // backward() of y = relu(bn(x) + residual) from forward_fused, given out = y: writes
  // masked_dy = dy [out > 0] (the residual's gradient too) in the pass that sums it, and dx.
  void backward_masked(const float* x, const float* out, const float* dy, float* masked_dy,
                       float* dx, std::int64_t batch, bool accumulate);

  // After a backward call with dx = nullptr (which sums, and writes no dx): the map that
  // computes that dx from the same dy (backward_masked's masked_dy) and x as a later pass reads
  // them (channels_last.hpp; Conv2d::backward_adding's dy_map).
  BatchNormGradMap grad_map(const float* x) const {
    return {x,
            dx_k_.data(),
            dx_a_.data(),
            dx_b_.data(),
            mean_.data(),
            scale_.data(),
            shift_.data(),
            opt_.relu};
  }

  std::span<float> running_mean() { return running_mean_; }
  std::span<float> running_var() { return running_var_; }

 private:
  Shape3 shape_;
  BatchNormOptions opt_;
  std::size_t gamma_segment_ = 0, beta_segment_ = 0;
  float *gamma_ = nullptr, *beta_ = nullptr, *dgamma_ = nullptr, *dbeta_ = nullptr;
  std::vector<float> running_mean_, running_var_;
  std::vector<float> mean_, inv_std_;  // [C] of the last forward (batch or running statistics)
  // The last forward's y = fma(x, scale, shift) per channel (the ReLU mask's source).
  std::vector<float> scale_, shift_;
  // Per-pass scratch: per-plane pairs of partial sums in 16 lanes, [batch][C][2][16], and per
  // channel the backward's dx = k (dy - a - (x - mean) b).
  AlignedBuffer lane_sums_;
  std::vector<float> dx_k_, dx_a_, dx_b_;
  bool last_train_ = true;
};

}  // namespace lbt::nn
