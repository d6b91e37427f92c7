// ReLU y = max(x, 0); the backward uses the output's sign (y > 0 <=> x > 0).
#pragma once
#include "nn/layer.hpp"

namespace lbt::nn {

class Relu final : public Layer {
 public:
  explicit Relu(std::int64_t features) : features_(features) {}
  std::string describe() const override { return "ReLU"; }
  std::int64_t in_features() const override { return features_; }
  std::int64_t out_features() const override { return features_; }
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;

 private:
  std::int64_t features_;
};

}  // namespace lbt::nn
