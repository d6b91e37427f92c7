// 2-D convolution over NCHW images, y = W * x + b, W: [out_c, in_c, k, k] (PyTorch layout),
// optional bias [out_c]. Per-image im2col + GEMM (Chellapilla et al. 2006; Caffe's conv):
// each OpenMP thread takes whole images with its own column workspace, so the workspace
// ([in_c*k*k, out_h*out_w], at most ~0.6 MB for the simple CNN) stays in L2 and single-
// threaded GEMMs run side by side instead of one 2-thread GEMM per image.
#pragma once
#include <vector>

#include "core/tensor.hpp"
#include "trainer/nn/layer.hpp"
#include "trainer/nn/linear.hpp"
#include "trainer/nn/shape.hpp"

namespace lbt::nn {

struct Conv2dOptions {
  std::int64_t out_channels = 0, kernel = 3, stride = 1, padding = 0;
  bool bias = true;  // off before BatchNorm, whose shift makes a bias redundant
};

class Conv2d final : public Layer {
 public:
  Conv2d(Shape3 in, Conv2dOptions options, InitScheme init);
  std::string describe() const override;
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return out_.size(); }
  const char* param_prefix() const override { return "conv"; }
  std::int64_t macs_per_example() const override { return out_.size() * rows_; }
  void register_params(ParameterStore& store, const std::string& prefix) override;
  void bind(ParameterStore& store) override;
  void init(Rng& rng) override;
  // x: [batch, in_c, in_h, in_w] -> y: [batch, out_c, out_h, out_w]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx,
                std::int64_t batch, bool accumulate) override;

  Shape3 in_shape() const { return in_; }
  Shape3 out_shape() const { return out_; }

 private:
  // col: [in_c*k*k, out_h*out_w] from one image x: [in_c, in_h, in_w] (zeros in the padding).
  void im2col(const float* x, float* col) const;
  // dx: [in_c, in_h, in_w] = sum of dcol's entries over the windows each pixel falls in.
  void col2im(const float* dcol, float* dx) const;
  void valid_columns(std::int64_t kj, std::int64_t& lo, std::int64_t& hi) const;
  bool direct() const;  // 1x1, stride 1, no padding: the image is its own column matrix
  float* workspace(int thread, std::size_t size);

  Shape3 in_, out_;
  Conv2dOptions opt_;
  InitScheme init_;
  std::int64_t rows_ = 0;  // in_c * k * k
  std::size_t w_segment_ = 0, b_segment_ = 0;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  std::vector<AlignedBuffer> col_, dcol_, dw_part_;  // per thread
};

}  // namespace lbt::nn
