// Per-example gradient norms of Conv2d (and Linear) layers against per-example gradients
// computed one example at a time through the model's own backward (batch of 1, no 1/batch),
// and the per-example support rule: BatchNorm couples examples, so ResNets are not exact.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/cpu/relu.hpp"
#include "nn/model.hpp"
#include "noise/per_example.hpp"
#include "noise/per_example_conv.hpp"
#include "support/random.hpp"
#include "trainer/noise_log.hpp"

using namespace lbt;

namespace {

// Per segment: sum over examples of |g_n|^2, each g_n from a forward/backward of example n
// alone (in double).
std::vector<double> one_at_a_time(nn::Model& model, const std::vector<float>& x,
                                  const std::vector<std::int32_t>& labels) {
  const std::int64_t dim = model.input_dim(), classes = model.output_dim();
  const auto& segments = model.store().segments();
  std::vector<double> sums(segments.size(), 0.0);
  for (std::size_t n = 0; n < labels.size(); ++n) {
    const float* xn = x.data() + n * dim;
    const float* logits = model.forward(xn, 1, true);
    nn::softmax_cross_entropy(logits, &labels[n], 1, classes, model.output_grad(), 1.0f, nullptr);
    model.backward(xn, 1, false);
    const auto g = model.store().grads();
    for (std::size_t s = 0; s < segments.size(); ++s) {
      for (std::size_t i = 0; i < segments[s].size; ++i) {
        const double v = g[segments[s].offset + i];
        sums[s] += v * v;
      }
    }
  }
  return sums;
}

// The same sums from one batched forward/backward and the taps (mean loss: grad_scale 1/N).
std::vector<double> from_taps(nn::Model& model, const std::vector<float>& x,
                              const std::vector<std::int32_t>& labels) {
  const auto batch = static_cast<std::int64_t>(labels.size());
  const float scale = 1.0f / static_cast<float>(batch);
  const float* logits = model.forward(x.data(), batch, true);
  nn::softmax_cross_entropy(logits, labels.data(), batch, model.output_dim(), model.output_grad(),
                            scale, nullptr);
  model.backward(x.data(), batch, false);
  trainer::TapBuffers buffers;
  const noise::ExampleTaps taps = trainer::example_taps(model, x.data(), buffers);
  std::vector<double> sums(model.store().segments().size(), 0.0);
  noise::add_per_example_sq_norms(taps.linear, batch, scale, sums);
  noise::add_conv_per_example_sq_norms(taps.conv, batch, scale, sums);
  return sums;
}

void check_against_one_at_a_time(nn::Model& model, std::int64_t batch, std::uint64_t seed) {
  const auto x = test::normal_vector(static_cast<std::size_t>(batch * model.input_dim()), seed);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (std::size_t n = 0; n < labels.size(); ++n)
    labels[n] =
        static_cast<std::int32_t>((n * 7 + seed) % static_cast<std::size_t>(model.output_dim()));
  const std::vector<double> got = from_taps(model, x, labels);
  const std::vector<double> want = one_at_a_time(model, x, labels);
  double worst = 0.0;
  for (std::size_t s = 0; s < got.size(); ++s)
    worst = std::max(worst, std::abs(got[s] - want[s]) / want[s]);
  BOOST_TEST_MESSAGE("largest relative difference of a segment's sum: " << worst);
  for (std::size_t s = 0; s < got.size(); ++s) {
    BOOST_TEST_CONTEXT(model.store().segments()[s].name) {
      BOOST_TEST(want[s] > 0.0);
      // float32 round-off of the two paths (Winograd vs im2col + GEMM): ~1e-6 relative
      BOOST_TEST(std::abs(got[s] - want[s]) <= 2e-5 * want[s], got[s] << " vs " << want[s]);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(simple_cnn_per_example_norms_match_one_example_at_a_time) {
  // conv5x5-32 (im2col/direct path, 1 input channel), conv5x5-64 (Winograd), two Linear layers
  auto model = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {1, 12, 12});
  auto rng = make_rng(3, RngStream::kInit);
  model->build(rng);
  BOOST_TEST(trainer::per_example_support(*model).exact);
  check_against_one_at_a_time(*model, 6, 17);
}

BOOST_AUTO_TEST_CASE(strided_padded_conv_with_bias_per_example_norms_match) {
  // 3x3 stride 2 padding 1 over 3 x 9 x 9 (odd size: the last window hangs over the edge),
  // then a 1x1 conv, then a Linear head
  nn::Model model;
  auto conv = std::make_unique<nn::Conv2d>(
      nn::Shape3{3, 9, 9},
      nn::Conv2dOptions{.out_channels = 5, .kernel = 3, .stride = 2, .padding = 1},
      nn::InitScheme::kHe);
  const nn::Shape3 c1 = conv->out_shape();
  model.add(std::move(conv));
  model.add(std::make_unique<nn::Relu>(c1.size()));
  auto point = std::make_unique<nn::Conv2d>(c1, nn::Conv2dOptions{.out_channels = 4, .kernel = 1},
                                            nn::InitScheme::kHe);
  const nn::Shape3 c2 = point->out_shape();
  model.add(std::move(point));
  model.add(std::make_unique<nn::Linear>(c2.size(), 3, nn::InitScheme::kHe));
  auto rng = make_rng(5, RngStream::kInit);
  model.build(rng);
  check_against_one_at_a_time(model, 5, 29);
}

BOOST_AUTO_TEST_CASE(batch_norm_makes_per_example_norms_inexact_and_says_which_layer) {
  auto model = nn::Model::from_spec("resnet:8", nn::InitScheme::kHe, {3, 8, 8});
  auto rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  const noise::PerExampleSupport support = trainer::per_example_support(*model);
  BOOST_TEST(!support.exact);
  BOOST_TEST(support.reason.find("BatchNorm") != std::string::npos, support.reason);
}
