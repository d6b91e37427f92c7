// Pooling over NCHW images: MaxPool2d (k x k windows, stride s, no padding), AvgPool2d (same
// windows, mean) and GlobalAvgPool ([C, H, W] -> [C, 1, 1], the head of He et al. 2016's
// CIFAR ResNets). No parameters; max pooling's backward recomputes each window's argmax from
// x and y instead of storing indices (ties: the first maximum in row-major order gets it).
#pragma once
#include "nn/layer.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

class MaxPool2d final : public Layer {
 public:
  // relu: y = max(0, max over the window), a ReLU after the pool in the same pass (its
  // backward masks dy by y > 0 where the pool routes it).
  MaxPool2d(Shape3 in, std::int64_t kernel, std::int64_t stride, bool relu = false);
  std::string describe() const override;
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return out_.size(); }
  // x: [batch, C, H, W] -> y: [batch, C, Ho, Wo]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  Shape3 out_shape() const override { return out_; }

 private:
  Shape3 in_, out_;
  std::int64_t kernel_, stride_;
  bool relu_;
};

class AvgPool2d final : public Layer {
 public:
  AvgPool2d(Shape3 in, std::int64_t kernel, std::int64_t stride);
  std::string describe() const override;
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return out_.size(); }
  // x: [batch, C, H, W] -> y: [batch, C, Ho, Wo]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  Shape3 out_shape() const override { return out_; }

 private:
  Shape3 in_, out_;
  std::int64_t kernel_, stride_;
};

class GlobalAvgPool final : public Layer {
 public:
  explicit GlobalAvgPool(Shape3 in) : in_(in) {}
  std::string describe() const override { return "GlobalAvgPool(" + in_.text() + ")"; }
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return in_.c; }
  // x: [batch, C, H, W] -> y: [batch, C]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  Shape3 out_shape() const override { return {in_.c, 1, 1}; }

 private:
  Shape3 in_;
};

}  // namespace lbt::nn
