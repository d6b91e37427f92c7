// ResNet basic block (He et al. 2016, arXiv:1512.03385, Fig. 2 and Sec. 4.2):
//   y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
// conv1 is 3x3 with the block's stride, conv2 3x3 stride 1, both without bias. The shortcut
// is the identity when shapes agree, else a 1x1 strided projection + BatchNorm (the paper's
// option B; its CIFAR nets used option A, zero-padded identity, which has no parameters).
// Owns its sub-layers and their activations, allocated at the largest batch seen.
#pragma once
#include <memory>

#include "core/tensor.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"

namespace lbt::nn {

class BasicBlock final : public Layer {
 public:
  BasicBlock(Shape3 in, std::int64_t out_channels, std::int64_t stride, InitScheme init);
  std::string describe() const override;
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return out_.size(); }
  const char* param_prefix() const override { return "block"; }
  bool couples_examples() const override { return true; }  // its BatchNorms
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const override;
  std::int64_t macs_per_example() const override {
    return conv1_.macs_per_example() + conv2_.macs_per_example() +
           (proj_conv_ ? proj_conv_->macs_per_example() : 0);
  }
  void register_params(ParameterStore& store, const std::string& prefix) override;
  void bind(ParameterStore& store) override;
  void init(Rng& rng) override;
  std::vector<std::span<float>> buffers() override;
  // x: [batch, in_c, H, W] -> y: [batch, out_c, H / stride, W / stride]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  Shape3 out_shape() const override { return out_; }
  bool has_projection() const { return static_cast<bool>(proj_conv_); }

 private:
  void reserve(std::int64_t batch);

  Shape3 in_, out_;
  Conv2d conv1_, conv2_;
  BatchNorm bn1_, bn2_;
  std::unique_ptr<Conv2d> proj_conv_;
  std::unique_ptr<BatchNorm> proj_bn_;
  // Activations [batch, out]: conv1 out, relu(bn1) out, conv2 out, projection conv out;
  // gradients: relu-masked dy, two scratch. relu(bn1) is not written (r1_ stays empty) where
  // conv2 applies it while copying its input (Conv2d::forward_affine, Winograd path), nor the
  // projection's BN output, which bn2's pass applies (BatchNorm::forward_fused).
  AlignedBuffer a1_, r1_, a2_, sa_, gz_, g1_, g2_;
  // conv1's and conv2's output moments for bn1 and bn2 (Conv2d::forward_with_moments), where
  // those convolutions write them.
  AlignedBuffer moments1_, moments2_;
  std::int64_t capacity_ = 0;
};

}  // namespace lbt::nn
