// The CPU backend: nn/backend.hpp's operations by Eigen, OpenBLAS (core/gemm.hpp) and lbt's own
// kernels in this folder. Nothing here chooses an algorithm: each layer picks its own paths
// (conv2d.hpp lists the convolution's four), so this file only says which class does what.
#include <algorithm>

#include "core/device.hpp"
#include "nn/backend.hpp"
#include "nn/cpu/basic_block.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/dropout.hpp"
#include "nn/cpu/linear.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/cpu/pool.hpp"
#include "nn/cpu/relu.hpp"

namespace lbt::nn {
namespace {

class CpuBackend final : public Backend {
 public:
  // The buffers and their primitives are the host's (core/device.cpp).
  const char* name() const override { return host().name(); }
  bool host_memory() const override { return true; }
  AlignedBuffer allocate(std::size_t floats) const override { return host().allocate(floats); }
  void copy(std::span<const float> from, std::span<float> to) const override {
    host().copy(from, to);
  }
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) const override {
    host().gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  double sum_squares(std::span<const float> x) const override { return host().sum_squares(x); }
  double dot(std::span<const float> x, std::span<const float> y) const override {
    return host().dot(x, y);
  }

  std::unique_ptr<Layer> linear(std::int64_t in, std::int64_t out, InitScheme init,
                                bool bias) const override {
    return std::make_unique<Linear>(in, out, init, bias);
  }
  std::unique_ptr<Layer> conv2d(Shape3 in, const Conv2dOptions& options,
                                InitScheme init) const override {
    return std::make_unique<Conv2d>(in, options, init);
  }
  std::unique_ptr<Layer> relu(std::int64_t features) const override {
    return std::make_unique<Relu>(features);
  }
  std::unique_ptr<Layer> max_pool(Shape3 in, std::int64_t kernel, std::int64_t stride,
                                  bool relu) const override {
    return std::make_unique<MaxPool2d>(in, kernel, stride, relu);
  }
  std::unique_ptr<Layer> avg_pool(Shape3 in, std::int64_t kernel,
                                  std::int64_t stride) const override {
    return std::make_unique<AvgPool2d>(in, kernel, stride);
  }
  std::unique_ptr<Layer> global_avg_pool(Shape3 in) const override {
    return std::make_unique<GlobalAvgPool>(in);
  }
  std::unique_ptr<Layer> batch_norm(Shape3 shape, const BatchNormOptions& options) const override {
    return std::make_unique<BatchNorm>(shape, options);
  }
  std::unique_ptr<Layer> dropout(std::int64_t features, double p) const override {
    return std::make_unique<Dropout>(features, p);
  }
  std::unique_ptr<Layer> residual(Shape3 in, std::int64_t out_channels, std::int64_t stride,
                                  InitScheme init) const override {
    return std::make_unique<BasicBlock>(in, out_channels, stride, init);
  }

  double softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t batch,
                               std::int64_t classes, float* dlogits, float grad_scale,
                               std::int64_t* correct, double* row_losses) const override {
    return nn::softmax_cross_entropy(logits, labels, batch, classes, dlogits, grad_scale, correct,
                                     row_losses);
  }
  double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                            std::int64_t dim, float* dpred, float grad_scale) const override {
    return nn::half_squared_error(pred, target, batch, dim, dpred, grad_scale);
  }

 private:
  static const Device& host() { return host_device(); }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace lbt::nn
