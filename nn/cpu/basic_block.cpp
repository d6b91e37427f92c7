// BasicBlock; see basic_block.hpp. Backward, with z = bn2(a2) + shortcut(x) and y = relu(z):
//   dz = dy * [y > 0];  branch: bn2 -> conv2 -> bn1 (with its relu) -> conv1 into dx;
//   shortcut: dx += dz (identity) or dx += conv_s^T bn_s^T dz (projection), each added in the
//   pass of a convolution's backward that writes dx (Conv2d::backward_adding).
#include "nn/cpu/basic_block.hpp"

namespace lbt::nn {

BasicBlock::BasicBlock(Shape3 in, std::int64_t out_channels, std::int64_t stride, InitScheme init)
    : in_(in),
      conv1_(in,
             {.out_channels = out_channels,
              .kernel = 3,
              .stride = stride,
              .padding = 1,
              .bias = false},
             init),
      conv2_(conv1_.out_shape(),
             {.out_channels = out_channels, .kernel = 3, .stride = 1, .padding = 1, .bias = false},
             init),
      bn1_(conv1_.out_shape(), {.relu = true}),
      bn2_(conv2_.out_shape()) {
  out_ = conv2_.out_shape();
  if (stride != 1 || in.c != out_channels) {
    proj_conv_ = std::make_unique<Conv2d>(in,
                                          Conv2dOptions{.out_channels = out_channels,
                                                        .kernel = 1,
                                                        .stride = stride,
                                                        .padding = 0,
                                                        .bias = false},
                                          init);
    proj_bn_ = std::make_unique<BatchNorm>(proj_conv_->out_shape());
  }
}

std::string BasicBlock::describe() const {
  return "BasicBlock(" + std::to_string(in_.c) + "->" + std::to_string(out_.c) + ", s" +
         std::to_string(in_.h / out_.h) + (proj_conv_ ? ", 1x1 projection" : "") + ")";
}

void BasicBlock::register_params(ParameterStore& store, const std::string& prefix) {
  conv1_.register_params(store, prefix + ".conv1");
  bn1_.register_params(store, prefix + ".bn1");
  conv2_.register_params(store, prefix + ".conv2");
  bn2_.register_params(store, prefix + ".bn2");
  if (proj_conv_) {
    proj_conv_->register_params(store, prefix + ".shortcut.conv");
    proj_bn_->register_params(store, prefix + ".shortcut.bn");
  }
}

void BasicBlock::bind(ParameterStore& store) {
  conv1_.bind(store), bn1_.bind(store), conv2_.bind(store), bn2_.bind(store);
  if (proj_conv_) proj_conv_->bind(store), proj_bn_->bind(store);
}

void BasicBlock::init(Rng& rng) {
  conv1_.init(rng), bn1_.init(rng), conv2_.init(rng), bn2_.init(rng);
  if (proj_conv_) proj_conv_->init(rng), proj_bn_->init(rng);
}

std::vector<std::span<float>> BasicBlock::buffers() {
  std::vector<std::span<float>> out;
  for (BatchNorm* bn : {&bn1_, &bn2_, proj_bn_.get()}) {
    if (!bn) continue;
    for (auto s : bn->buffers()) out.push_back(s);
  }
  return out;
}

// The block's own activations (as reserve() sizes them) and its sub-layers' workspaces.
std::int64_t BasicBlock::workspace_bytes(std::int64_t batch, int threads) const {
  const auto bytes = aligned_buffer_bytes;
  const std::int64_t out = batch * out_.size();
  std::int64_t total =
      bytes(out) * (5 + (conv2_.reads_affine_input() ? 0 : 1) + (proj_conv_ ? 1 : 0));
  if (conv1_.writes_output_moments()) total += bytes(batch * 3 * out_.c);
  if (conv2_.writes_output_moments()) total += bytes(batch * 3 * out_.c);
  // conv1 adds the identity shortcut's gradient through a dx scratch off the Winograd path
  if (!proj_conv_ && !conv1_.reads_affine_input()) total += bytes(batch * in_.size());
  total += conv1_.workspace_bytes(batch, threads) + conv2_.workspace_bytes(batch, threads) +
           bn1_.workspace_bytes(batch, threads) + bn2_.workspace_bytes(batch, threads);
  if (proj_conv_)
    total +=
        proj_conv_->workspace_bytes(batch, threads) + proj_bn_->workspace_bytes(batch, threads);
  return total;
}

void BasicBlock::reserve(std::int64_t batch) {
  if (batch <= capacity_) return;
  const auto out = static_cast<std::size_t>(batch * out_.size());
  for (AlignedBuffer* b : {&a1_, &a2_, &gz_, &g1_, &g2_}) b->resize(out);
  if (!conv2_.reads_affine_input()) r1_.resize(out);
  if (proj_conv_) sa_.resize(out);
  const auto moments = static_cast<std::size_t>(batch * 3 * out_.c);
  if (conv1_.writes_output_moments()) moments1_.resize(moments);
  if (conv2_.writes_output_moments()) moments2_.resize(moments);
  capacity_ = batch;
}

void BasicBlock::forward(const float* x, float* y, std::int64_t batch, bool train) {
  reserve(batch);
  // In train mode each convolution that can sums its output's per-plane moments for the
  // BatchNorm after it in the pass that writes the output: the statistics without reading it.
  float* m1 = train && conv1_.writes_output_moments() ? moments1_.data() : nullptr;
  float* m2 = train && conv2_.writes_output_moments() ? moments2_.data() : nullptr;
  if (m1)
    conv1_.forward_with_moments(x, a1_.data(), batch, m1);
  else
    conv1_.forward(x, a1_.data(), batch, train);
  if (conv2_.reads_affine_input()) {  // relu(bn1(a1)) applied in conv2's copy of its input
    bn1_.forward_statistics(a1_.data(), batch, train, m1);
    conv2_.forward_affine(a1_.data(), bn1_.affine(), a2_.data(), batch, m2);
  } else {
    bn1_.forward(a1_.data(), r1_.data(), batch, train);  // with its ReLU
    conv2_.forward(r1_.data(), a2_.data(), batch, train);
  }
  if (!proj_conv_) {
    bn2_.forward_fused(a2_.data(), y, batch, train, x, /*relu=*/true, nullptr, m2);
    return;
  }
  // The projection's BatchNorm applied in bn2's pass: y = relu(bn2(a2) + bn_s(conv_s(x))).
  proj_conv_->forward(x, sa_.data(), batch, train);
  proj_bn_->forward_statistics(sa_.data(), batch, train);
  const ChannelAffine shortcut_bn = proj_bn_->affine();
  bn2_.forward_fused(a2_.data(), y, batch, train, sa_.data(), /*relu=*/true, &shortcut_bn, m2);
}

void BasicBlock::backward(const float* x, const float* y, const float* dy, float* dx,
                          std::int64_t batch, bool accumulate) {
  // dz = dy [y > 0] into gz_ as bn2's backward sums it; then the residual branch. A BatchNorm's
  // input gradient is not written where the convolution before it reads its output gradient
  // through the BatchNorm's map (Conv2d::reads_mapped_gradient): a pass that wrote it and one
  // that read it back fewer.
  const bool map2 = conv2_.reads_mapped_gradient(), map1 = conv1_.reads_mapped_gradient();
  bn2_.backward_masked(a2_.data(), y, dy, gz_.data(), map2 ? nullptr : g1_.data(), batch,
                       accumulate);
  const BatchNormGradMap bn2_grad = bn2_.grad_map(a2_.data());
  if (conv2_.reads_affine_input())
    conv2_.backward_affine(a1_.data(), bn1_.affine(), map2 ? gz_.data() : g1_.data(), g2_.data(),
                           batch, accumulate, map2 ? &bn2_grad : nullptr);
  else
    conv2_.backward(r1_.data(), a2_.data(), g1_.data(), g2_.data(), batch, accumulate);
  bn1_.backward(a1_.data(), nullptr, g2_.data(), map1 ? nullptr : g1_.data(), batch, accumulate);
  const BatchNormGradMap bn1_grad = bn1_.grad_map(a1_.data());
  const float* conv1_dy = map1 ? g2_.data() : g1_.data();
  const BatchNormGradMap* conv1_map = map1 ? &bn1_grad : nullptr;
  if (!proj_conv_) {  // dx = conv1's input gradient + dz, in the pass that writes dx
    conv1_.backward_adding(x, conv1_dy, dx, gz_.data(), batch, accumulate, conv1_map);
    return;
  }
  conv1_.backward_adding(x, conv1_dy, dx, nullptr, batch, accumulate, conv1_map);
  // Projection shortcut: dx += conv_s^T bn_s^T dz, added where the projection writes.
  const bool map_s = proj_conv_->reads_mapped_gradient(dx != nullptr);
  proj_bn_->backward(sa_.data(), nullptr, gz_.data(), map_s ? nullptr : g1_.data(), batch,
                     accumulate);
  const BatchNormGradMap proj_grad = proj_bn_->grad_map(sa_.data());
  proj_conv_->backward_adding(x, map_s ? gz_.data() : g1_.data(), dx, dx, batch, accumulate,
                              map_s ? &proj_grad : nullptr);
}

}  // namespace lbt::nn
