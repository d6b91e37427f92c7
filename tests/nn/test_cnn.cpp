// Image layers: finite-difference checks of Conv2d, pools, Dropout (frozen mask) and the ResNet
// basic block; model specs for the simple CNN and CIFAR ResNets. BatchNorm: test_batch_norm.cpp.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "nn/cpu/basic_block.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/dropout.hpp"
#include "nn/cpu/linear.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/cpu/pool.hpp"
#include "nn/model.hpp"
#include "support/conv_paths.hpp"
#include "support/gradient_check.hpp"
#include "support/layer_check.hpp"
#include "support/random.hpp"

using namespace lbt;
using lbt::test::check_gradient;
using lbt::test::check_kink_aware;
using lbt::test::check_layer;
using lbt::test::KinkAwareResult;
using lbt::test::normal_vector;

namespace {

// Distinct values spaced 0.05 apart, shuffled: no ties and no near-ties for max pooling.
std::vector<float> distinct_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i) - 0.025f * n;
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(image_layers)

BOOST_AUTO_TEST_CASE(conv2d_gradients_match_finite_differences_with_stride_and_padding) {
  struct Case {
    nn::Shape3 in;
    nn::Conv2dOptions opt;
  };
  const Case cases[] = {
      {{2, 5, 5}, {.out_channels = 3, .kernel = 3, .stride = 1, .padding = 1, .bias = true}},
      {{2, 7, 6}, {.out_channels = 3, .kernel = 3, .stride = 2, .padding = 1, .bias = false}},
      {{1, 6, 6}, {.out_channels = 2, .kernel = 5, .stride = 1, .padding = 2, .bias = true}},
      {{3, 5, 5}, {.out_channels = 2, .kernel = 1, .stride = 1, .padding = 0, .bias = true}},
      {{3, 6, 6}, {.out_channels = 4, .kernel = 1, .stride = 2, .padding = 0, .bias = false}},
      {{1, 4, 4}, {.out_channels = 2, .kernel = 2, .stride = 3, .padding = 2, .bias = true}},
      // the direct path over padded planes (input gradient direct, then through im2col)
      {{8, 5, 4}, {.out_channels = 8, .kernel = 3, .stride = 1, .padding = 1, .bias = true}},
      {{2, 6, 7}, {.out_channels = 8, .kernel = 5, .stride = 1, .padding = 2, .bias = false}},
      {{2, 6, 4}, {.out_channels = 8, .kernel = 3, .stride = 2, .padding = 1, .bias = true}},
  };
  for (const Case& c : cases) {
    nn::Conv2d conv(c.in, c.opt, nn::InitScheme::kHe);
    check_layer(conv, 3, normal_vector(static_cast<std::size_t>(3 * c.in.size()), 1), true);
  }
}

BOOST_AUTO_TEST_CASE(conv2d_matches_a_direct_convolution_written_out) {
  // y[o][i][j] = b[o] + sum_{c,u,v} W[o][c][u][v] x[c][i*s - p + u][j*s - p + v]
  const nn::Shape3 in{2, 5, 4};
  nn::Conv2d conv(in, {.out_channels = 3, .kernel = 3, .stride = 2, .padding = 1},
                  nn::InitScheme::kHe);
  ParameterStore store;
  lbt::test::bind_fresh(conv, store, "c", 2);
  for (std::size_t i = 0; i < 3; ++i) store.params()[store.segments()[1].offset + i] = 0.5f * i;
  const auto x = normal_vector(static_cast<std::size_t>(2 * in.size()), 3);
  const nn::Shape3 out = conv.out_shape();
  BOOST_TEST((out == nn::Shape3{3, 3, 2}));
  std::vector<float> y(static_cast<std::size_t>(2 * out.size()));
  conv.forward(x.data(), y.data(), 2, true);
  const float* W = store.params().data();
  const float* b = W + store.segments()[1].offset;
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 3; ++o)
      for (int i = 0; i < out.h; ++i)
        for (int j = 0; j < out.w; ++j) {
          double s = b[o];
          for (int c = 0; c < 2; ++c)
            for (int u = 0; u < 3; ++u)
              for (int v = 0; v < 3; ++v) {
                const int r = i * 2 - 1 + u, q = j * 2 - 1 + v;
                if (r < 0 || r >= in.h || q < 0 || q >= in.w) continue;
                s +=
                    W[((o * 2 + c) * 3 + u) * 3 + v] * x[n * in.size() + (c * in.h + r) * in.w + q];
              }
          const float got = y[n * out.size() + (o * out.h + i) * out.w + j];
          BOOST_CHECK_MESSAGE(
              std::abs(got - s) < 1e-4 + 1e-4 * std::abs(s),
              "y[" << n << "," << o << "," << i << "," << j << "] " << got << " vs " << s);
        }
}

BOOST_AUTO_TEST_CASE(max_pool_gradients_match_finite_differences_without_ties) {
  nn::MaxPool2d pool({2, 6, 5}, 2, 2);
  BOOST_TEST((pool.out_shape() == nn::Shape3{2, 3, 2}));
  check_layer(pool, 2, distinct_values(2 * 60, 4), true, 1e-3);
  nn::MaxPool2d even({3, 6, 8}, 2, 2);  // even sizes: the vectorised path
  check_layer(even, 2, distinct_values(2 * 144, 5), true, 1e-3);
  nn::MaxPool2d overlapping({1, 5, 5}, 3, 1);
  check_layer(overlapping, 2, distinct_values(2 * 25, 6), true, 1e-3);
}

BOOST_AUTO_TEST_CASE(avg_pool_and_global_avg_pool_gradients_match_finite_differences) {
  nn::AvgPool2d pool({2, 6, 6}, 2, 2);
  check_layer(pool, 2, normal_vector(2 * 72, 7), true);
  nn::AvgPool2d overlapping({1, 5, 5}, 3, 2);
  check_layer(overlapping, 2, normal_vector(2 * 25, 8), true);
  nn::GlobalAvgPool gap({3, 4, 4});
  check_layer(gap, 2, normal_vector(2 * 48, 9), true);
}

BOOST_AUTO_TEST_CASE(dropout_with_a_frozen_mask_matches_finite_differences_and_scales) {
  nn::Dropout drop(50, 0.4);
  std::uint64_t index = 0;
  drop.seed_streams(7, 0, index);
  std::vector<float> x(100, 1.0f), y(100);
  drop.forward(x.data(), y.data(), 2, true);
  int kept = 0;
  for (float v : y) {
    BOOST_TEST((v == 0.0f || std::abs(v - 1.0f / 0.6f) < 1e-6f));
    kept += v != 0.0f;
  }
  BOOST_TEST(kept > 40);
  BOOST_TEST(kept < 80);
  drop.forward(x.data(), y.data(), 2, false);
  BOOST_TEST(y == x);
  drop.forward(x.data(), y.data(), 2, true);
  drop.freeze_mask(true);
  check_layer(drop, 2, normal_vector(100, 14), true);
}

BOOST_AUTO_TEST_CASE(residual_block_gradients_match_finite_differences) {
  // Identity shortcut, and a strided 1x1 projection.
  nn::BasicBlock same({2, 4, 4}, 2, 1, nn::InitScheme::kHe);
  BOOST_TEST(!same.has_projection());
  auto inputs = [](std::uint64_t seed) { return normal_vector(3 * 32, 100 + seed); };
  check_layer(same, 3, inputs, true, 1e-3, /*kinks=*/true);
  nn::BasicBlock down({2, 4, 4}, 3, 2, nn::InitScheme::kHe);
  BOOST_TEST(down.has_projection());
  BOOST_TEST((down.out_shape() == nn::Shape3{3, 2, 2}));
  check_layer(down, 3, inputs, true, 1e-3, true);
  nn::BasicBlock down_eval({2, 4, 4}, 3, 2, nn::InitScheme::kHe);
  check_layer(down_eval, 3, inputs, false, 1e-3, true);
  BOOST_TEST(down.buffers().size() == 6u);
}

BOOST_AUTO_TEST_CASE(image_model_specs_build_the_papers_architectures) {
  auto cnn = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {1, 28, 28});
  auto rng = make_rng(0, RngStream::kInit);
  cnn->build(rng);
  // conv1 32x1x5x5 + 32, conv2 64x32x5x5 + 64, fc1 3136x1024 + 1024, fc2 1024x10 + 10.
  BOOST_TEST(cnn->store().num_params() == 832u + 51264u + 3212288u + 10250u);
  BOOST_TEST(cnn->input_dim() == 784);
  BOOST_TEST(cnn->output_dim() == 10);
  BOOST_TEST(cnn->store().segments()[0].name == "conv1.weight");
  BOOST_TEST((cnn->store().segments()[1].kind == ParamKind::kBias));
  for (const char* spec : {"resnet:8", "resnet:20"}) {
    auto net = nn::Model::from_spec(spec, nn::InitScheme::kHe);
    net->build(rng);
    BOOST_TEST(net->input_dim() == 3 * 32 * 32);
    BOOST_TEST(net->output_dim() == 10);
    std::size_t norm = 0;
    for (const Segment& s : net->store().segments()) norm += s.kind == ParamKind::kNorm;
    BOOST_TEST(norm > 0u);
    BOOST_TEST(!net->buffers().empty());
  }
  // ResNet-20: 0.27M parameters (He et al. 2016, Table 6), with two 1x1 projections here.
  auto r20 = nn::Model::from_spec("resnet:20-100", nn::InitScheme::kHe);
  r20->build(rng);
  BOOST_TEST(r20->output_dim() == 100);
  auto logistic = nn::Model::from_spec("logistic:784-10", nn::InitScheme::kZero);
  BOOST_TEST(logistic->input_dim() == 784);
}

BOOST_AUTO_TEST_CASE(image_model_spec_errors_name_both_shapes) {
  BOOST_CHECK_THROW(nn::Model::from_spec("resnet:9", nn::InitScheme::kHe), ConfigError);
  BOOST_CHECK_THROW(nn::Model::from_spec("cnn:fancy", nn::InitScheme::kHe), ConfigError);
  try {
    nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {784});
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("[784]") != std::string::npos);
    BOOST_TEST(what.find("[1, 28, 28]") != std::string::npos);
  }
  BOOST_CHECK_THROW(nn::Model::from_spec("resnet:8", nn::InitScheme::kHe, {3, 30, 30}),
                    ConfigError);
}

BOOST_AUTO_TEST_CASE(small_resnet_gradients_match_finite_differences) {
  // Whole-model check through stem, blocks, pooling and the classifier.
  auto net = nn::Model::from_spec("resnet:8-3", nn::InitScheme::kHe, {2, 4, 4});
  auto rng = make_rng(4, RngStream::kInit);
  net->build(rng);
  const std::int64_t batch = 3;
  std::int32_t labels[batch] = {0, 1, 2};
  for (std::uint64_t seed = 21;; ++seed) {
    BOOST_REQUIRE_MESSAGE(seed < 80, "no inputs in 60 draws left two kink-free entries a segment");
    auto x = normal_vector(static_cast<std::size_t>(batch * net->input_dim()), seed);
    auto loss = [&] {
      const float* logits = net->forward(x.data(), batch, true);
      return nn::softmax_cross_entropy(logits, labels, batch, 3, nullptr, 1.0f, nullptr);
    };
    const float* logits = net->forward(x.data(), batch, true);
    nn::softmax_cross_entropy(logits, labels, batch, 3, net->output_grad(), 1.0f, nullptr);
    net->backward(x.data(), batch, false);
    std::vector<float> analytic(net->store().grads().begin(), net->store().grads().end());
    // The first entries of each segment: enough to catch a wrong path through any layer. With
    // thousands of ReLUs behind train-mode BatchNorm, some entry's differences straddle a kink
    // in most draws; each entry is perturbed on its own, so only that entry is set aside.
    std::vector<std::pair<std::string, KinkAwareResult>> results;
    bool enough = true;
    for (const Segment& seg : net->store().segments()) {
      const std::size_t n = std::min<std::size_t>(seg.size, 4);
      results.emplace_back(seg.name,
                           check_kink_aware(net->store().params().data() + seg.offset, n, loss,
                                            analytic.data() + seg.offset, 1e-3, 0.015));
      enough = results.back().second.checked >= std::min<std::size_t>(n, 2);
      if (!enough) break;
    }
    if (!enough) continue;
    for (auto& [name, k] : results) {
      BOOST_CHECK_MESSAGE(k.r.max_error < 1e-2, name << "[" << k.r.worst_index
                                                     << "]: " << k.r.worst_analytic << " vs "
                                                     << k.r.worst_numeric);
    }
    break;
  }
}

namespace {

// One training step of `net` (built) through Model::forward/backward, which fuse a convolution
// with the BatchNorm after it, equals its layers run one by one through Layer::forward and
// backward, which fuse nothing: the same outputs and parameter gradients, to float rounding.
void expect_step_equals_its_layers_one_by_one(nn::Model& net) {
  const std::int64_t batch = 4, classes = net.output_dim();
  const auto x = normal_vector(static_cast<std::size_t>(batch * net.input_dim()), 71);
  const std::int32_t labels[batch] = {0, 3, 7, 9};
  const float* fused_logits = net.forward(x.data(), batch, true);
  const std::vector<float> logits(fused_logits, fused_logits + batch * classes);
  nn::softmax_cross_entropy(logits.data(), labels, batch, classes, net.output_grad(), 1.0f,
                            nullptr);
  net.backward(x.data(), batch, false);
  const std::vector<float> fused(net.store().grads().begin(), net.store().grads().end());

  const auto& layers = net.layers();
  std::vector<std::vector<float>> out(layers.size()), grad(layers.size());
  const float* in = x.data();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    out[i].resize(static_cast<std::size_t>(batch * layers[i]->out_features()));
    grad[i].resize(out[i].size());
    layers[i]->forward(in, out[i].data(), batch, true);
    in = out[i].data();
  }
  lbt::test::expect_close(out.back(), logits, "logits", 1e-4f, 1e-4f);
  nn::softmax_cross_entropy(out.back().data(), labels, batch, classes, grad.back().data(), 1.0f,
                            nullptr);
  for (std::size_t i = layers.size(); i-- > 0;)
    layers[i]->backward(i > 0 ? out[i - 1].data() : x.data(), out[i].data(), grad[i].data(),
                        i > 0 ? grad[i - 1].data() : nullptr, batch, false);
  const std::vector<float> one_by_one(net.store().grads().begin(), net.store().grads().end());
  lbt::test::expect_close(fused, one_by_one, "parameter gradients", 1e-4f, 1e-3f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_resnet_step_equals_running_its_layers_one_by_one) {
  // The stem BatchNorm takes its statistics from the stem convolution's moments and the
  // convolution reads the BatchNorm's map (16x16 images: the stem's weight gradient goes over
  // padded planes).
  auto net = nn::Model::from_spec("resnet:8", nn::InitScheme::kHe, {3, 16, 16});
  auto rng = make_rng(5, RngStream::kInit);
  net->build(rng);
  expect_step_equals_its_layers_one_by_one(*net);
}

// A convolution with a bias (the layer list's default) before a BatchNorm was fused as one
// without, then refused at the first step ("forward_with_moments: only on the Winograd and
// direct paths"; 2026-11-30 audit): it runs unfused, and one without a bias fused.
BOOST_AUTO_TEST_CASE(a_conv_with_or_without_bias_before_batch_norm_steps_as_its_layers) {
  for (const bool bias : {true, false}) {
    nn::Model net;
    net.add(std::make_unique<nn::Conv2d>(
        nn::Shape3{1, 28, 28}, nn::Conv2dOptions{.out_channels = 8, .padding = 1, .bias = bias},
        nn::InitScheme::kHe));
    net.add(
        std::make_unique<nn::BatchNorm>(nn::Shape3{8, 28, 28}, nn::BatchNormOptions{.relu = true}));
    net.add(std::make_unique<nn::Linear>(8 * 28 * 28, 10, nn::InitScheme::kHe));
    auto rng = make_rng(6, RngStream::kInit);
    net.build(rng);
    BOOST_TEST_CONTEXT("bias " << bias) {
      expect_step_equals_its_layers_one_by_one(net);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
