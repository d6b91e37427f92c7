// Image layers: finite-difference checks of Conv2d, pools, BatchNorm (both modes), Dropout
// (frozen mask) and the ResNet basic block; BatchNorm against hand-computed values; model
// specs for the simple CNN and CIFAR ResNets.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "support/gradient_check.hpp"
#include "support/random.hpp"
#include "trainer/nn/basic_block.hpp"
#include "trainer/nn/batch_norm.hpp"
#include "trainer/nn/conv2d.hpp"
#include "trainer/nn/dropout.hpp"
#include "trainer/nn/loss.hpp"
#include "trainer/nn/model.hpp"
#include "trainer/nn/pool.hpp"

using namespace lbt;
using lbt::test::check_gradient;
using lbt::test::normal_vector;

namespace {

constexpr double kStep = 1e-2;
constexpr double kTolerance = 3e-3;

// Central differences like check_gradient, but also one-sided ones: where they disagree, the
// perturbation straddled a ReLU kink (in train-mode BatchNorm every parameter moves every
// pre-activation, so one value near 0 spoils them all) and the caller draws new inputs.
struct KinkAwareResult {
  lbt::test::GradCheckResult r;
  bool kinked = false;
};
KinkAwareResult check_kink_aware(float* x, std::size_t n, const std::function<double()>& f,
                                 const float* analytic, double step, double kink = 0.005) {
  // A kink shifts one one-sided slope by about twice the central difference's error, so
  // `kink` below twice the test's tolerance catches every kink that could fail it.
  KinkAwareResult out;
  const double f0 = f();
  for (std::size_t i = 0; i < n; ++i) {
    const float saved = x[i];
    x[i] = saved + static_cast<float>(step);
    const double up = f();
    x[i] = saved - static_cast<float>(step);
    const double down = f();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * step);
    const double plus = (up - f0) / step, minus = (f0 - down) / step;
    if (std::abs(plus - minus) > kink * std::max(1.0, std::abs(numeric))) out.kinked = true;
    const double a = analytic[i];
    const double err = std::abs(a - numeric) / std::max({1.0, std::abs(a), std::abs(numeric)});
    if (err > out.r.max_error) out.r = {err, i, a, numeric};
  }
  return out;
}

// Checks d(loss)/d(x) and d(loss)/d(params) of one layer, loss = sum_i c_i y_i with fixed
// random c, against central differences. Registers and initialises the layer's parameters
// (then moves them off their init: BN's gamma = 1, beta = 0; zero biases). With `kinks`, the
// layer contains ReLUs: inputs are redrawn (seed + 1, ...) until no difference straddles one.
void check_layer(nn::Layer& layer, std::int64_t batch,
                 const std::function<std::vector<float>(std::uint64_t)>& make_x, bool train,
                 double step = kStep, bool kinks = false) {
  ParameterStore store;
  layer.register_params(store, "l");
  store.allocate();
  layer.bind(store);
  auto rng = make_rng(11, RngStream::kInit);
  layer.init(rng);
  auto noise = normal_vector(store.num_params(), 99, 0.3f);
  for (std::size_t i = 0; i < store.num_params(); ++i) store.params()[i] += noise[i];
  const std::int64_t out = layer.out_features();
  const auto c = normal_vector(static_cast<std::size_t>(batch * out), 5);
  std::vector<float> y(c.size());
  for (std::uint64_t seed = 1;; ++seed) {
    BOOST_REQUIRE_MESSAGE(seed < 50, "no inputs without a kink in 50 draws");
    std::vector<float> x = make_x(seed);
    BOOST_REQUIRE(static_cast<std::int64_t>(x.size()) == batch * layer.in_features());
    std::vector<float> dx(x.size());
    auto loss = [&] {
      layer.forward(x.data(), y.data(), batch, train);
      double s = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(c[i]) * y[i];
      return s;
    };
    loss();
    layer.backward(x.data(), y.data(), c.data(), dx.data(), batch, /*accumulate=*/false);
    std::vector<float> grads(store.grads().begin(), store.grads().end());
    std::vector<std::pair<std::string, KinkAwareResult>> results;
    results.emplace_back("input", check_kink_aware(x.data(), x.size(), loss, dx.data(), step));
    for (const Segment& seg : store.segments()) {
      results.emplace_back(seg.name, check_kink_aware(store.params().data() + seg.offset, seg.size,
                                                      loss, grads.data() + seg.offset, step));
    }
    bool kinked = false;
    for (auto& [name, r] : results) kinked = kinked || r.kinked;
    if (kinks && kinked) continue;
    BOOST_TEST_CONTEXT(layer.describe()
                       << (train ? " train" : " eval") << ", input seed " << seed) {
      for (auto& [name, k] : results) {
        BOOST_CHECK_MESSAGE(k.r.max_error < kTolerance,
                            name << "[" << k.r.worst_index << "]: analytic " << k.r.worst_analytic
                                 << " vs numeric " << k.r.worst_numeric);
      }
      // accumulate = true adds to the parameter gradients.
      if (store.num_params() > 0) {
        loss();
        layer.backward(x.data(), y.data(), c.data(), nullptr, batch, /*accumulate=*/true);
        for (std::size_t i = 0; i < grads.size(); ++i) {
          const float want = 2 * grads[i], got = store.grads()[i];
          if (std::abs(got - want) > 1e-4f + 1e-4f * std::abs(want)) {
            BOOST_ERROR("accumulated grad " << i << ": " << got << " vs " << want);
            break;
          }
        }
      }
    }
    return;
  }
}

void check_layer(nn::Layer& layer, std::int64_t batch, std::vector<float> x, bool train,
                 double step = kStep) {
  check_layer(
      layer, batch, [&](std::uint64_t) { return x; }, train, step, false);
}

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
  conv.register_params(store, "c");
  store.allocate();
  conv.bind(store);
  auto rng = make_rng(2, RngStream::kInit);
  conv.init(rng);
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

BOOST_AUTO_TEST_CASE(batch_norm_gradients_match_finite_differences_in_both_modes) {
  nn::BatchNorm bn({3, 2, 3});
  check_layer(bn, 4, normal_vector(4 * 18, 10, 2.0f), /*train=*/true);
  nn::BatchNorm bn_eval({3, 2, 3});
  // Eval mode with non-trivial running statistics.
  bn_eval.running_mean()[0] = 0.5f, bn_eval.running_var()[1] = 2.0f;
  check_layer(bn_eval, 4, normal_vector(4 * 18, 12, 2.0f), /*train=*/false);
  nn::BatchNorm bn1d({5, 1, 1});
  check_layer(bn1d, 6, normal_vector(30, 13), /*train=*/true);
}

BOOST_AUTO_TEST_CASE(batch_norm_with_relu_is_batch_norm_then_relu_in_both_modes) {
  // Finite differences through the ReLU, and the same values and gradients as a plain
  // BatchNorm followed by max(., 0) with dy masked by hand.
  for (bool train : {true, false}) {
    nn::BatchNorm checked({3, 2, 3}, {.relu = true});
    checked.running_mean()[0] = 0.5f, checked.running_var()[1] = 2.0f;
    auto inputs = [](std::uint64_t seed) { return normal_vector(4 * 18, 40 + seed, 2.0f); };
    check_layer(checked, 4, inputs, train, kStep, /*kinks=*/true);

    nn::BatchNorm fused({3, 2, 3}, {.relu = true}), plain({3, 2, 3});
    ParameterStore store;
    fused.register_params(store, "f");
    plain.register_params(store, "p");
    store.allocate();
    fused.bind(store), plain.bind(store);
    auto noise = normal_vector(6, 99, 0.3f);
    for (nn::BatchNorm* bn : {&fused, &plain}) {
      auto rng = make_rng(11, RngStream::kInit);
      bn->init(rng);
      bn->running_mean()[0] = 0.5f, bn->running_var()[1] = 2.0f;
    }
    // Both layers' gamma and beta moved off their init by the same amounts.
    for (const Segment& seg : store.segments())
      for (std::size_t i = 0; i < seg.size; ++i)
        store.params()[seg.offset + i] += noise[i + (seg.name.ends_with("bias") ? 3 : 0)];
    const auto x = normal_vector(4 * 18, 77, 2.0f), dy = normal_vector(4 * 18, 78);
    std::vector<float> y_fused(x.size()), y_plain(x.size()), dx_fused(x.size()), dx_plain(x.size()),
        dy_masked(x.size());
    fused.forward(x.data(), y_fused.data(), 4, train);
    fused.backward(x.data(), y_fused.data(), dy.data(), dx_fused.data(), 4, false);
    plain.forward(x.data(), y_plain.data(), 4, train);
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      dy_masked[i] = y_plain[i] > 0.0f ? dy[i] : 0.0f;
      zeros += y_plain[i] <= 0.0f;
      y_plain[i] = std::max(y_plain[i], 0.0f);
    }
    BOOST_TEST(zeros > 10u);  // the mask matters
    plain.backward(x.data(), y_plain.data(), dy_masked.data(), dx_plain.data(), 4, false);
    for (std::size_t i = 0; i < x.size(); ++i) {
      BOOST_TEST(y_fused[i] == y_plain[i]);
      BOOST_TEST(dx_fused[i] == dx_plain[i], boost::test_tools::tolerance(1e-5f));
    }
    const auto& seg = store.segments();  // f.weight, f.bias, p.weight, p.bias
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(store.grads()[seg[k].offset + i] == store.grads()[seg[k + 2].offset + i],
                   boost::test_tools::tolerance(1e-5f));
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_train_mode_matches_hand_computed_values_and_updates_running_stats) {
  // One channel, 2 images of 1x2: values {1, 3, 5, 7}: mean 4, biased var 5, unbiased 20/3.
  nn::BatchNorm bn({1, 1, 2}, {.momentum = 0.1, .eps = 1e-5});
  ParameterStore store;
  bn.register_params(store, "bn");
  store.allocate();
  bn.bind(store);
  auto rng = make_rng(0, RngStream::kInit);
  bn.init(rng);
  BOOST_TEST((store.segments()[0].kind == ParamKind::kNorm));
  BOOST_TEST((store.segments()[1].kind == ParamKind::kNorm));
  store.params()[store.segments()[0].offset] = 2.0f;  // gamma
  store.params()[store.segments()[1].offset] = 0.5f;  // beta
  float x[4] = {1, 3, 5, 7}, y[4];
  bn.forward(x, y, 2, true);
  const double inv_std = 1.0 / std::sqrt(5.0 + 1e-5);
  for (int i = 0; i < 4; ++i) {
    const double want = 2.0 * (x[i] - 4.0) * inv_std + 0.5;
    BOOST_CHECK_MESSAGE(std::abs(y[i] - want) < 1e-5, "y[" << i << "] " << y[i] << " vs " << want);
  }
  BOOST_TEST(std::abs(bn.running_mean()[0] - 0.4) < 1e-6);                      // 0.9 * 0 + 0.1 * 4
  BOOST_TEST(std::abs(bn.running_var()[0] - (0.9 + 0.1 * 20.0 / 3.0)) < 1e-6);  // unbiased var
  BOOST_TEST(bn.buffers().size() == 2u);
}

BOOST_AUTO_TEST_CASE(batch_norm_eval_mode_uses_running_statistics) {
  nn::BatchNorm bn({2, 1, 1});
  ParameterStore store;
  bn.register_params(store, "bn");
  store.allocate();
  bn.bind(store);
  auto rng = make_rng(0, RngStream::kInit);
  bn.init(rng);
  bn.running_mean()[0] = 1.0f, bn.running_var()[0] = 4.0f;
  bn.running_mean()[1] = -2.0f, bn.running_var()[1] = 0.25f;
  float x[4] = {3, 0, 3, -1}, y[4];  // 2 examples x 2 channels
  bn.forward(x, y, 2, false);
  const double want[4] = {2 / std::sqrt(4 + 1e-5), 2 / std::sqrt(0.25 + 1e-5),
                          2 / std::sqrt(4 + 1e-5), 1 / std::sqrt(0.25 + 1e-5)};
  for (int i = 0; i < 4; ++i) BOOST_TEST(std::abs(y[i] - want[i]) < 1e-5);
  // Eval mode leaves the running statistics alone; a batch of one is fine.
  bn.forward(x, y, 1, false);
  BOOST_TEST(bn.running_mean()[0] == 1.0f);
  BOOST_CHECK_THROW(bn.forward(x, y, 1, true), ConfigError);
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
    BOOST_REQUIRE_MESSAGE(seed < 80, "no inputs without a kink in 60 draws");
    auto x = normal_vector(static_cast<std::size_t>(batch * net->input_dim()), seed);
    auto loss = [&] {
      const float* logits = net->forward(x.data(), batch, true);
      return nn::softmax_cross_entropy(logits, labels, batch, 3, nullptr, 1.0f, nullptr);
    };
    const float* logits = net->forward(x.data(), batch, true);
    nn::softmax_cross_entropy(logits, labels, batch, 3, net->output_grad(), 1.0f, nullptr);
    net->backward(x.data(), batch, false);
    std::vector<float> analytic(net->store().grads().begin(), net->store().grads().end());
    // The first entries of each segment: enough to catch a wrong path through any layer.
    std::vector<std::pair<std::string, KinkAwareResult>> results;
    bool kinked = false;
    for (const Segment& seg : net->store().segments()) {
      results.emplace_back(seg.name, check_kink_aware(net->store().params().data() + seg.offset,
                                                      std::min<std::size_t>(seg.size, 4), loss,
                                                      analytic.data() + seg.offset, 1e-3, 0.015));
      kinked = kinked || results.back().second.kinked;
      if (kinked) break;
    }
    if (kinked) continue;
    for (auto& [name, k] : results) {
      BOOST_CHECK_MESSAGE(k.r.max_error < 1e-2, name << "[" << k.r.worst_index
                                                     << "]: " << k.r.worst_analytic << " vs "
                                                     << k.r.worst_numeric);
    }
    break;
  }
}

BOOST_AUTO_TEST_SUITE_END()
