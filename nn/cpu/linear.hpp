// Fully connected layer y = x W^T + b, W: [out, in] (PyTorch layout), b: [out]; with bias = false
// (spec suffix :nobias) y = x W^T and no bias parameter is registered at all.
#pragma once
#include "core/tensor.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"

namespace lbt::nn {

class Linear final : public Layer {
 public:
  Linear(std::int64_t in, std::int64_t out, InitScheme init, bool bias = true);
  std::string describe() const override;
  std::int64_t in_features() const override { return in_; }
  std::int64_t out_features() const override { return out_; }
  void register_params(ParameterStore& store, const std::string& prefix) override;
  void bind(ParameterStore& store) override;
  void init(Rng& rng) override;
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;

  const char* param_prefix() const override { return "fc"; }
  std::int64_t macs_per_example() const override { return in_ * out_; }
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const override;
  const float* weight() const { return w_; }
  bool has_bias() const { return bias_; }
  const float* bias() const { return b_; }  // null without a bias
  std::size_t weight_segment() const { return w_segment_; }
  std::size_t bias_segment() const { return b_segment_; }  // only when has_bias()

 private:
  std::int64_t in_, out_;
  InitScheme init_;
  bool bias_;
  std::size_t w_segment_ = 0, b_segment_ = 0;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  // Small batches (linear.cpp): the forward multiplies transposed activations, x^T and y^T
  // (batch padded to 16 columns), so that W is read in place.
  bool panel_path(std::int64_t batch) const;
  void forward_panel(const float* x, float* y, std::int64_t batch);
  AlignedBuffer xt_, yt_;
};

}  // namespace lbt::nn
