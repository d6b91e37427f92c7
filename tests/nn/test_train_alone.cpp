// nn/ on its own: a model trained through the library's API (forward, loss, backward, the flat
// parameter and gradient buffers) with a plain gradient-descent loop written here, and no
// trainer/. The linear case is checked against the same descent computed in double from the
// closed-form gradient of softmax cross-entropy, X^T (softmax(XW^T + b) - Y) / n.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/params.hpp"
#include "core/rng.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/model.hpp"

using namespace lbt;

namespace {

struct Problem {
  std::int64_t n = 0, dim = 0, classes = 0;
  std::vector<float> x;
  std::vector<std::int32_t> labels;
};

// Two Gaussian blobs per class on a circle (class c at angle 2 pi c / classes), unit noise.
Problem blobs(std::int64_t n, std::int64_t classes, std::uint64_t seed) {
  Problem p{n, 2, classes, std::vector<float>(n * 2), std::vector<std::int32_t>(n)};
  Rng rng = make_rng(seed, RngStream::kSynthetic);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::int32_t>(i % classes);
    const double angle = 2.0 * M_PI * c / classes;
    p.x[2 * i] = static_cast<float>(2.0 * std::cos(angle)) + noise(rng);
    p.x[2 * i + 1] = static_cast<float>(2.0 * std::sin(angle)) + noise(rng);
    p.labels[i] = c;
  }
  return p;
}

// One full-batch gradient-descent step through nn's API; returns the mean loss before it.
double descend(nn::Model& model, const Problem& p, float lr, std::int64_t* correct) {
  const float* logits = model.forward(p.x.data(), p.n, /*train=*/true);
  const double loss = nn::softmax_cross_entropy(logits, p.labels.data(), p.n, p.classes,
                                                model.output_grad(), 1.0f / p.n, correct);
  model.backward(p.x.data(), p.n, /*accumulate=*/false);
  std::span<float> w = model.store().params();
  std::span<const float> g = model.store().grads();
  for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
  return loss / p.n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(linear_model_trained_through_nn_matches_gradient_descent_in_double) {
  const Problem p = blobs(64, 3, 11);
  auto model = nn::Model::from_spec("linear:2-3", nn::InitScheme::kGlorot);
  Rng rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  // The reference starts from the same parameters, packed as weight [3, 2] then bias [3] (the
  // store aligns each segment, so they are read through the segment offsets).
  const std::vector<Segment>& segments = model->store().segments();
  BOOST_REQUIRE_EQUAL(segments.size(), 2u);
  auto stored = [&](int k) -> float& {
    const Segment& s = k < 6 ? segments[0] : segments[1];
    return model->store().params()[s.offset + (k < 6 ? k : k - 6)];
  };
  std::vector<double> w(9);
  for (int k = 0; k < 9; ++k) w[k] = stored(k);
  const float lr = 0.5f;
  for (int step = 0; step < 50; ++step) {
    std::int64_t correct = 0;
    descend(*model, p, lr, &correct);
    std::vector<double> grad(9, 0.0);
    for (std::int64_t i = 0; i < p.n; ++i) {
      double z[3], zmax = -1e300, total = 0.0;
      for (int c = 0; c < 3; ++c) {
        z[c] = w[6 + c] + w[2 * c] * p.x[2 * i] + w[2 * c + 1] * p.x[2 * i + 1];
        zmax = std::max(zmax, z[c]);
      }
      for (int c = 0; c < 3; ++c) total += std::exp(z[c] - zmax);
      for (int c = 0; c < 3; ++c) {
        const double r = (std::exp(z[c] - zmax) / total - (p.labels[i] == c)) / p.n;
        grad[2 * c] += r * p.x[2 * i];
        grad[2 * c + 1] += r * p.x[2 * i + 1];
        grad[6 + c] += r;
      }
    }
    for (int k = 0; k < 9; ++k) w[k] -= lr * grad[k];
  }
  for (int k = 0; k < 9; ++k) BOOST_TEST(stored(k) == w[k], boost::test_tools::tolerance(2e-5));
}

BOOST_AUTO_TEST_CASE(mlp_trained_through_nn_separates_four_blobs) {
  const Problem p = blobs(256, 4, 12);
  auto model = nn::Model::from_spec("mlp:2-32-4", nn::InitScheme::kHe);
  Rng rng = make_rng(2, RngStream::kInit);
  model->build(rng);
  model->reserve(p.n);
  std::int64_t correct = 0;
  const double first = descend(*model, p, 0.2f, &correct);
  double last = first;
  for (int step = 0; step < 400; ++step) last = descend(*model, p, 0.2f, &correct);
  // The blobs sit 2.8 apart with noise 0.5: a Bayes error under 0.5%, so nearly all of the
  // 256 training points are separable.
  BOOST_TEST(last < 0.1 * first);
  BOOST_TEST(correct >= 250);
}
