// Finite-difference checks of one layer's input and parameter gradients, aware of ReLU kinks
// (test_cnn.cpp, test_batch_norm.cpp).
#pragma once
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/params.hpp"
#include "core/rng.hpp"
#include "nn/layer.hpp"
#include "support/gradient_check.hpp"
#include "support/random.hpp"

namespace lbt::test {

constexpr double kStep = 1e-2;
constexpr double kTolerance = 3e-3;

// Central differences like check_gradient, but also one-sided ones: where they disagree, the
// perturbation straddled a ReLU kink (in train-mode BatchNorm every parameter moves every
// pre-activation, so one value near 0 spoils them all) and the caller draws new inputs, or
// judges the entries whose differences straddled none: r covers those `checked` entries only.
struct KinkAwareResult {
  GradCheckResult r;
  bool kinked = false;
  std::size_t checked = 0;
};
inline KinkAwareResult check_kink_aware(float* x, std::size_t n, const std::function<double()>& f,
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
    if (std::abs(plus - minus) > kink * std::max(1.0, std::abs(numeric))) {
      out.kinked = true;
      continue;
    }
    ++out.checked;
    const double a = analytic[i];
    const double err = std::abs(a - numeric) / std::max({1.0, std::abs(a), std::abs(numeric)});
    if (err > out.r.max_error) out.r = {err, i, a, numeric};
  }
  return out;
}

// Registers one layer's parameters in an empty `store`, allocates and binds them, and
// initialises them from `seed`.
inline void bind_fresh(nn::Layer& layer, ParameterStore& store, const std::string& prefix,
                       std::uint64_t seed) {
  layer.register_params(store, prefix);
  store.allocate();
  layer.bind(store);
  auto rng = make_rng(seed, RngStream::kInit);
  layer.init(rng);
}

// Checks d(loss)/d(x) and d(loss)/d(params) of one layer, loss = sum_i c_i y_i with fixed
// random c, against central differences. Registers and initialises the layer's parameters
// (then moves them off their init: BN's gamma = 1, beta = 0; zero biases). With `kinks`, the
// layer contains ReLUs: inputs are redrawn (seed + 1, ...) until no difference straddles one.
inline void check_layer(nn::Layer& layer, std::int64_t batch,
                        const std::function<std::vector<float>(std::uint64_t)>& make_x, bool train,
                        double step = kStep, bool kinks = false) {
  ParameterStore store;
  bind_fresh(layer, store, "l", 11);
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

inline void check_layer(nn::Layer& layer, std::int64_t batch, std::vector<float> x, bool train,
                        double step = kStep) {
  check_layer(
      layer, batch, [&](std::uint64_t) { return x; }, train, step, false);
}

}  // namespace lbt::test
