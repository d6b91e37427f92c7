// Layers and losses: finite-difference gradient checks and hand-computed loss values.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "nn/cpu/linear.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/cpu/pool.hpp"
#include "nn/cpu/relu.hpp"
#include "nn/model.hpp"
#include "support/gradient_check.hpp"
#include "support/random.hpp"

using namespace lbt;
using lbt::test::check_gradient;
using lbt::test::normal_vector;

namespace {

// Float parameters with loss sums in double: the step is large enough that float rounding of
// the perturbed inputs stays far below the O(step^2) truncation error of central differences.
constexpr double kStep = 1e-2;
constexpr double kTolerance = 2e-3;
// Smaller step through ReLU networks: a smaller neighbourhood of the kink to stay out of.
constexpr double kMlpStep = 1e-3;

}  // namespace

BOOST_AUTO_TEST_SUITE(layers)

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_matches_hand_computed_values) {
  // logits [0, ln 3] for label 1: p = [1/4, 3/4], loss = -ln(3/4); dlogits = p - onehot.
  float logits[2] = {0.0f, static_cast<float>(std::log(3.0))};
  std::int32_t label = 1;
  float d[2];
  std::int64_t correct = 0;
  double loss = nn::softmax_cross_entropy(logits, &label, 1, 2, d, 1.0f, &correct);
  BOOST_TEST(loss == -std::log(0.75), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(d[0] == 0.25f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(d[1] == -0.25f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(correct == 1);
  // Huge logits stay finite (max subtraction).
  float big[2] = {1000.0f, 0.0f};
  label = 0;
  BOOST_TEST(std::isfinite(nn::softmax_cross_entropy(big, &label, 1, 2, d, 1.0f, nullptr)));
}

BOOST_AUTO_TEST_CASE(half_squared_error_matches_hand_computed_values) {
  float pred[2] = {1.0f, 3.0f}, target[2] = {0.0f, 1.0f}, d[2];
  // 0.5 * (1^2 + 2^2) = 2.5; gradient (pred - target) * 0.5
  BOOST_TEST(nn::half_squared_error(pred, target, 2, 1, d, 0.5f) == 2.5);
  BOOST_TEST(d[0] == 0.5f);
  BOOST_TEST(d[1] == 1.0f);
}

BOOST_AUTO_TEST_CASE(cross_entropy_gradient_matches_finite_differences) {
  const int B = 3, C = 4;
  auto logits = normal_vector(B * C, 1);
  std::int32_t labels[B] = {0, 3, 2};
  std::vector<float> d(B * C);
  nn::softmax_cross_entropy(logits.data(), labels, B, C, d.data(), 1.0f, nullptr);
  auto f = [&] {
    return nn::softmax_cross_entropy(logits.data(), labels, B, C, nullptr, 1.0f, nullptr);
  };
  auto r = check_gradient(logits.data(), logits.size(), f, d.data(), kStep);
  BOOST_CHECK_MESSAGE(r.max_error < kTolerance, "logit " << r.worst_index << ": "
                                                         << r.worst_analytic << " vs "
                                                         << r.worst_numeric);
}

// Checks d(loss)/d(params) and d(loss)/d(input) of a whole model against finite differences,
// with loss = sum of softmax cross-entropy over a small batch.
void check_model_gradients(nn::Model& model, std::int64_t batch) {
  const std::int64_t in = model.input_dim(), out = model.output_dim();
  // Draw inputs until every ReLU input is away from the kink, so no central difference
  // straddles it (the analytic gradient is exact there, the numeric one is not).
  std::vector<float> x;
  for (std::uint64_t seed = 7;; ++seed) {
    BOOST_REQUIRE(seed < 1000);
    x = normal_vector(static_cast<std::size_t>(batch * in), seed);
    model.forward(x.data(), batch, true);
    bool clear = true;
    for (std::size_t i = 0; i < model.layers().size(); ++i) {
      if (model.layers()[i]->describe() != "ReLU") continue;
      const float* pre = model.layer_input(i, x.data());
      for (std::int64_t j = 0; j < batch * model.layers()[i]->in_features(); ++j) {
        clear = clear && std::abs(pre[j]) > 0.02f;
      }
    }
    if (clear) break;
  }
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (std::int64_t i = 0; i < batch; ++i) labels[i] = static_cast<std::int32_t>(i % out);
  auto loss = [&] {
    const float* logits = model.forward(x.data(), batch, true);
    return nn::softmax_cross_entropy(logits, labels.data(), batch, out, nullptr, 1.0f, nullptr);
  };
  const float* logits = model.forward(x.data(), batch, true);
  nn::softmax_cross_entropy(logits, labels.data(), batch, out, model.output_grad(), 1.0f, nullptr);
  model.backward(x.data(), batch, false);
  std::vector<float> analytic(model.store().grads().begin(), model.store().grads().end());
  for (const Segment& seg : model.store().segments()) {
    BOOST_TEST_CONTEXT("segment " << seg.name) {
      auto r = check_gradient(model.store().params().data() + seg.offset, seg.size, loss,
                              analytic.data() + seg.offset, kMlpStep);
      BOOST_CHECK_MESSAGE(r.max_error < kTolerance, "param " << r.worst_index << ": analytic "
                                                             << r.worst_analytic << " vs numeric "
                                                             << r.worst_numeric);
    }
  }
}

BOOST_AUTO_TEST_CASE(linear_layer_gradients_match_finite_differences) {
  auto model = nn::Model::from_spec("linear:5-3", nn::InitScheme::kGlorot);
  auto rng = make_rng(3, RngStream::kInit);
  model->build(rng);
  // Non-zero biases so their gradient path is exercised with a non-trivial forward.
  for (const Segment& s : model->store().segments()) {
    if (s.kind == ParamKind::kBias) {
      for (std::size_t i = 0; i < s.size; ++i)
        model->store().params()[s.offset + i] = 0.1f * (i + 1);
    }
  }
  check_model_gradients(*model, 4);
}

BOOST_AUTO_TEST_CASE(mlp_gradients_match_finite_differences_including_relu) {
  auto model = nn::Model::from_spec("mlp:6-8-7-3", nn::InitScheme::kHe);
  auto rng = make_rng(5, RngStream::kInit);
  model->build(rng);
  check_model_gradients(*model, 5);
}

BOOST_AUTO_TEST_CASE(nobias_models_have_only_weights_and_their_gradients_match_finite_differences) {
  // linear:5-3 has 5*3 weights; mlp:6-8-7-3 has 6*8 + 8*7 + 7*3 = 125; the simple CNN on
  // [1, 28, 28] has 32*1*25 + 64*32*25 + 3136*1024 + 1024*10 = 3273504; no biases anywhere.
  // (Counted over the segments: the store pads each to an aligned offset.)
  const std::pair<const char*, std::size_t> cases[] = {
      {"linear:5-3:nobias", 15}, {"mlp:6-8-7-3:nobias", 125}, {"cnn:simple:nobias", 3273504}};
  for (const auto& [spec, count] : cases) {
    BOOST_TEST_CONTEXT(spec) {
      auto model = nn::Model::from_spec(spec, nn::InitScheme::kHe, {1, 28, 28});
      auto rng = make_rng(5, RngStream::kInit);
      model->build(rng);
      std::size_t params = 0;
      for (const Segment& s : model->store().segments()) {
        BOOST_TEST((s.kind == ParamKind::kWeight), s.name);
        params += s.size;
      }
      BOOST_TEST(params == count);
      BOOST_TEST(model->describe().find(", no bias)") != std::string::npos, model->describe());
      if (std::string(spec).rfind("cnn", 0) != 0) check_model_gradients(*model, 5);
    }
  }
  BOOST_TEST(nn::Model::from_spec("linear:784-10:nobias", nn::InitScheme::kHe)->describe() ==
             "Linear(784->10, no bias)");
}

BOOST_AUTO_TEST_CASE(input_gradient_of_linear_and_relu_matches_finite_differences) {
  // loss = sum_j c_j * relu(Wx + b)_j; check d/dx with inputs kept away from ReLU's kink.
  ParameterStore store;
  nn::Linear fc(4, 3, nn::InitScheme::kGlorot);
  nn::Relu relu(3);
  fc.register_params(store, "fc");
  store.allocate();
  fc.bind(store);
  auto rng = make_rng(9, RngStream::kInit);
  fc.init(rng);
  std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f}, h(3), y(3), c = {1.0f, -2.0f, 0.5f};
  auto loss = [&] {
    fc.forward(x.data(), h.data(), 1, true);
    relu.forward(h.data(), y.data(), 1, true);
    double s = 0;
    for (int j = 0; j < 3; ++j) s += c[j] * y[j];
    return s;
  };
  loss();
  for (float v : h) BOOST_REQUIRE(std::abs(v) > 5 * kStep);  // away from the kink
  std::vector<float> dh(3), dx(4);
  relu.backward(h.data(), y.data(), c.data(), dh.data(), 1, false);
  fc.backward(x.data(), h.data(), dh.data(), dx.data(), 1, false);
  auto r = check_gradient(x.data(), x.size(), loss, dx.data(), 1e-3);
  BOOST_TEST(r.max_error < kTolerance);
}

BOOST_AUTO_TEST_CASE(relu_is_std_max_bit_for_bit_on_special_values) {
  // 37 values (two vectors of 16 and a tail) of every kind, repeated: forward equals
  // std::max(x, 0.0f) bit for bit (a NaN passes, -0 stays -0: x unless x < 0) and backward passes
  // dy where y > 0, else +0. test_nn_avx2 and test_nn_generic run it on the other copies.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  const std::vector<float> kinds = {nan, -0.0f, 0.0f, -1.5f, 2.5f, inf, -inf, 1e-40f, -1e-40f};
  std::vector<float> x(37), y(37), dy(37), dx(37);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = kinds[i % kinds.size()];
    dy[i] = 0.25f * static_cast<float>(i) - 3.0f;
  }
  nn::Relu relu(37);
  relu.forward(x.data(), y.data(), 1, true);
  relu.backward(x.data(), y.data(), dy.data(), dx.data(), 1, false);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = std::max(x[i], 0.0f), want_dx = y[i] > 0.0f ? dy[i] : 0.0f;
    BOOST_TEST(std::memcmp(&y[i], &want, sizeof want) == 0, "x = " << x[i] << ", y = " << y[i]);
    BOOST_TEST(std::memcmp(&dx[i], &want_dx, sizeof want_dx) == 0, "x = " << x[i]);
  }
}

BOOST_AUTO_TEST_CASE(linear_equals_a_written_out_product_at_small_and_large_batches) {
  // Batches of up to 64 with in % 16 == 0 and out >= 32 take panel_gemm (x and y transposed,
  // the batch padded to 16 columns); others OpenBLAS. Both against sums in double (within 1e-5
  // of the sum of the terms' magnitudes), with gradient accumulation.
  const std::int64_t in = 48, out = 40;
  ParameterStore store;
  nn::Linear fc(in, out, nn::InitScheme::kGlorot);
  fc.register_params(store, "fc");
  store.allocate();
  fc.bind(store);
  const auto params = normal_vector(store.num_params(), 3);
  std::copy(params.begin(), params.end(), store.params().begin());
  const float* w = store.params().data();
  const float* bias = w + in * out;
  // sum over k < n of f(k) (a product of two floats), and the sum of magnitudes
  auto expect_sum = [](float got, double start, std::int64_t n, auto&& f, const char* what) {
    double want = start, scale = std::abs(start);
    for (std::int64_t k = 0; k < n; ++k) want += f(k), scale += std::abs(f(k));
    BOOST_TEST(std::abs(got - want) <= 1e-5 * scale, what << ": " << got << " vs " << want);
  };
  for (std::int64_t batch : {5, 64, 70}) {
    BOOST_TEST_CONTEXT("batch " << batch) {
      const auto x = normal_vector(static_cast<std::size_t>(batch * in), 4);
      const auto dy = normal_vector(static_cast<std::size_t>(batch * out), 5);
      std::vector<float> y(dy.size()), dx(x.size());
      fc.forward(x.data(), y.data(), batch, true);
      fc.backward(x.data(), y.data(), dy.data(), dx.data(), batch, false);
      fc.backward(x.data(), y.data(), dy.data(), dx.data(), batch, true);  // grads doubled
      const auto grads = store.grads();
      for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t o = 0; o < out; ++o)
          expect_sum(
              y[b * out + o], bias[o], in,
              [&](std::int64_t i) { return double(w[o * in + i]) * x[b * in + i]; }, "y");
        for (std::int64_t i = 0; i < in; ++i)
          expect_sum(
              dx[b * in + i], 0.0, out,
              [&](std::int64_t o) { return double(dy[b * out + o]) * w[o * in + i]; }, "dx");
      }
      for (std::int64_t o = 0; o < out; ++o) {
        expect_sum(
            grads[in * out + o], 0.0, batch, [&](std::int64_t b) { return 2.0 * dy[b * out + o]; },
            "db");
        for (std::int64_t i = 0; i < in; ++i)
          expect_sum(
              grads[o * in + i], 0.0, batch,
              [&](std::int64_t b) { return 2.0 * dy[b * out + o] * x[b * in + i]; }, "dW");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bias_free_linear_equals_a_written_out_product_at_small_and_large_batches) {
  // y = x W^T with no bias term, on the panel_gemm path (batch 5) and OpenBLAS's (batch 70),
  // against sums in double; the output buffer starts as NaN, so a read of it would show.
  const std::int64_t in = 48, out = 40;
  ParameterStore store;
  nn::Linear fc(in, out, nn::InitScheme::kGlorot, /*bias=*/false);
  fc.register_params(store, "fc");
  store.allocate();
  fc.bind(store);
  BOOST_TEST(store.num_params() == static_cast<std::size_t>(in * out));
  const auto params = normal_vector(store.num_params(), 3);
  std::copy(params.begin(), params.end(), store.params().begin());
  const float* w = store.params().data();
  for (std::int64_t batch : {5, 70}) {
    const auto x = normal_vector(static_cast<std::size_t>(batch * in), 4);
    std::vector<float> y(static_cast<std::size_t>(batch * out), std::nanf(""));
    fc.forward(x.data(), y.data(), batch, true);
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t o = 0; o < out; ++o) {
        double want = 0, scale = 0;
        for (std::int64_t i = 0; i < in; ++i) {
          want += double(w[o * in + i]) * x[b * in + i];
          scale += std::abs(double(w[o * in + i]) * x[b * in + i]);
        }
        BOOST_TEST(std::abs(y[b * out + o] - want) <= 1e-5 * scale, "batch " << batch);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(model_spec_errors_name_the_spec) {
  BOOST_CHECK_THROW(nn::Model::from_spec("mlp:784", nn::InitScheme::kHe), ConfigError);
  BOOST_CHECK_THROW(nn::Model::from_spec("mlp:784-x-10", nn::InitScheme::kHe), ConfigError);
  try {
    nn::Model::from_spec("transformer:1", nn::InitScheme::kHe);
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("transformer") != std::string::npos);
    BOOST_TEST(e.hint().find("mlp:") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(he_init_has_the_expected_variance) {
  auto model = nn::Model::from_spec("linear:400-300", nn::InitScheme::kHe);
  auto rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  const Segment& w = model->store().segments()[0];
  double sq = 0;
  for (std::size_t i = 0; i < w.size; ++i) sq += std::pow(model->store().params()[w.offset + i], 2);
  // He: Var = 2 / fan_in = 0.005; 120k samples -> relative standard error ~0.4%.
  BOOST_TEST(sq / w.size == 2.0 / 400, boost::test_tools::tolerance(0.03));
}

BOOST_AUTO_TEST_CASE(max_pool_ties_send_the_gradient_to_the_first_maximum) {
  // 2x2 windows of a [1, 3, 5] image (odd sizes: the last row and column are in no window).
  // Window 0 = {1, 1, 1, 0}: the first 1 wins; window 1 = {3, 2, 3, 3}: the first 3 wins.
  nn::MaxPool2d pool({1, 3, 5}, 2, 2);
  const std::vector<float> x = {1, 1, 3, 2, 9,  //
                                1, 0, 3, 3, 9,  //
                                9, 9, 9, 9, 9};
  std::vector<float> y(2), dx(x.size(), -1.0f);
  const std::vector<float> dy = {10, 20};
  pool.forward(x.data(), y.data(), 1, true);
  BOOST_TEST(y == (std::vector<float>{1, 3}), boost::test_tools::per_element());
  pool.backward(x.data(), y.data(), dy.data(), dx.data(), 1, false);
  const std::vector<float> want = {10, 0, 20, 0, 0,  //
                                   0,  0, 0,  0, 0,  //
                                   0,  0, 0,  0, 0};
  BOOST_TEST(dx == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(max_pool_ties_on_even_images_send_the_gradient_to_the_first_maximum) {
  // Even sizes take the vectorised path, where every pixel is in one window. The four windows
  // of a [1, 4, 4] image: {1, 1, 1, 1} (a four-way tie: top left wins), {2, 5, 5, 5} (top
  // right), {0, 1, 7, 7} (bottom left), {0, 1, 2, 8} (bottom right).
  nn::MaxPool2d pool({1, 4, 4}, 2, 2);
  const std::vector<float> x = {1, 1, 2, 5,  //
                                1, 1, 5, 5,  //
                                0, 1, 0, 1,  //
                                7, 7, 2, 8};
  std::vector<float> y(4), dx(x.size(), -1.0f);
  const std::vector<float> dy = {10, 20, 30, 40};
  pool.forward(x.data(), y.data(), 1, true);
  BOOST_TEST(y == (std::vector<float>{1, 5, 7, 8}), boost::test_tools::per_element());
  pool.backward(x.data(), y.data(), dy.data(), dx.data(), 1, false);
  const std::vector<float> want = {10, 0, 0, 20,  //
                                   0,  0, 0, 0,   //
                                   0,  0, 0, 0,   //
                                   30, 0, 0, 40};
  BOOST_TEST(dx == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(max_pool_with_relu_zeroes_negative_windows_and_their_gradients) {
  // Windows {-3, -1, -2, -5} (max -1: output 0, no gradient) and {1, 4, 2, 3} (max 4 at the
  // top right), on the vectorised path (even sizes) and the general one (3x3 windows).
  nn::MaxPool2d pool({1, 2, 4}, 2, 2, /*relu=*/true);
  const std::vector<float> x = {-3, -1, 1, 4,  //
                                -2, -5, 2, 3};
  std::vector<float> y(2), dx(x.size(), -1.0f);
  const std::vector<float> dy = {10, 20};
  pool.forward(x.data(), y.data(), 1, true);
  BOOST_TEST(y == (std::vector<float>{0, 4}), boost::test_tools::per_element());
  pool.backward(x.data(), y.data(), dy.data(), dx.data(), 1, false);
  BOOST_TEST(dx == (std::vector<float>{0, 0, 0, 20, 0, 0, 0, 0}), boost::test_tools::per_element());
  nn::MaxPool2d general({1, 3, 3}, 3, 1, /*relu=*/true);
  const std::vector<float> negative(9, -1.0f);
  std::vector<float> z(1), dz(9, -1.0f);
  const std::vector<float> g = {5};
  general.forward(negative.data(), z.data(), 1, true);
  general.backward(negative.data(), z.data(), g.data(), dz.data(), 1, false);
  BOOST_TEST(z[0] == 0.0f);
  BOOST_TEST(dz == std::vector<float>(9, 0.0f), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
