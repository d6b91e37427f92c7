// BatchNorm: finite differences in both modes, with its fused ReLU and through a ReLU after a
// residual sum; train mode against hand-computed values; eval mode's running statistics.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/channels_last.hpp"
#include "support/layer_check.hpp"
#include "support/random.hpp"

using namespace lbt;
using lbt::test::check_layer;
using lbt::test::kStep;
using lbt::test::normal_vector;

BOOST_AUTO_TEST_SUITE(batch_norm)

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

BOOST_AUTO_TEST_CASE(forward_statistics_gives_the_map_forward_applies) {
  // forward_statistics + affine(), applied by hand, equal forward()'s output bit for bit and
  // move the running statistics the same way, in both modes.
  for (bool train : {true, false}) {
    nn::BatchNorm a({3, 2, 3}, {.relu = true}), b({3, 2, 3}, {.relu = true});
    ParameterStore store;
    a.register_params(store, "a");
    b.register_params(store, "b");
    store.allocate();
    a.bind(store), b.bind(store);
    const auto params = normal_vector(6, 61, 0.5f);
    const auto& seg = store.segments();  // a.weight, a.bias, b.weight, b.bias
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < 3; ++i)
        store.params()[seg[k].offset + i] = store.params()[seg[k + 2].offset + i] =
            1.0f + params[3 * k + i];
    for (nn::BatchNorm* bn : {&a, &b}) bn->running_mean()[0] = 0.5f, bn->running_var()[1] = 2.0f;
    const auto x = normal_vector(4 * 18, 62, 2.0f);
    std::vector<float> y(x.size());
    a.forward(x.data(), y.data(), 4, train);
    b.forward_statistics(x.data(), 4, train);
    const nn::ChannelAffine map = b.affine();
    BOOST_TEST(map.relu);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t c = i / 6 % 3;
      BOOST_TEST(std::max(std::fma(x[i], map.scale[c], map.shift[c]), 0.0f) == y[i]);
    }
    for (std::size_t c = 0; c < 3; ++c) {
      BOOST_TEST(a.running_mean()[c] == b.running_mean()[c]);
      BOOST_TEST(a.running_var()[c] == b.running_var()[c]);
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_train_mode_matches_hand_computed_values_and_updates_running_stats) {
  // One channel, 2 images of 1x2: values {1, 3, 5, 7}: mean 4, biased var 5, unbiased 20/3.
  nn::BatchNorm bn({1, 1, 2}, {.momentum = 0.1, .eps = 1e-5});
  ParameterStore store;
  lbt::test::bind_fresh(bn, store, "bn", 0);
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

BOOST_AUTO_TEST_CASE(batch_norm_statistics_stay_accurate_far_from_zero_and_across_planes) {
  // Values near 1e4 with unit spread, whose plane means differ by several units: the batch
  // variance is the planes' own spread plus their means' spread (Chan et al.'s combination),
  // and E[x^2] - E[x]^2 in float would lose it entirely (1e8 to 7 digits). Statistics from a
  // pass over x, and from the per-plane moments a layer's copy back from channels-last sums
  // about each plane's own first value (from_channels_last; 25 pixels: a partial block).
  struct Case {
    nn::Shape3 shape;
    bool from_moments;
  };
  for (const Case& k : {Case{{2, 8, 8}, false}, Case{{16, 8, 8}, true}, Case{{16, 5, 5}, true}}) {
    BOOST_TEST_CONTEXT(k.shape.text() << (k.from_moments ? " from moments" : " from x")) {
      const nn::Shape3 shape = k.shape;
      const std::int64_t batch = 4, hw = shape.plane(), C = shape.c;
      nn::BatchNorm bn(shape, {.momentum = 1.0, .eps = 1e-5});
      ParameterStore store;
      lbt::test::bind_fresh(bn, store, "bn", 0);
      auto noise = normal_vector(static_cast<std::size_t>(batch * shape.size()), 5);
      std::vector<float> x(noise.size()), y(noise.size());
      std::vector<float> channels_last(noise.size());  // [n][q][c]
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t c = 0; c < C; ++c)
          for (std::int64_t i = 0; i < hw; ++i) {
            const std::size_t at = static_cast<std::size_t>((n * C + c) * hw + i);
            x[at] = 1e4f + 3.0f * static_cast<float>(n) + noise[at];
            channels_last[static_cast<std::size_t>((n * hw + i) * C + c)] = x[at];
          }
      if (k.from_moments) {
        std::vector<float> copied(x.size()), moments(static_cast<std::size_t>(batch * 3 * C));
        nn::from_channels_last(channels_last.data(), static_cast<int>(C), static_cast<int>(hw),
                               nullptr, batch, copied.data(), nullptr, moments.data());
        BOOST_TEST(copied == x, boost::test_tools::per_element());
        bn.forward_statistics(x.data(), batch, true, moments.data());
        const nn::ChannelAffine map = bn.affine();
        for (std::size_t i = 0; i < x.size(); ++i)
          y[i] = std::fma(x[i], map.scale[i / static_cast<std::size_t>(hw) % C],
                          map.shift[i / static_cast<std::size_t>(hw) % C]);
      } else {
        bn.forward(x.data(), y.data(), batch, true);
      }
      for (std::int64_t c = 0; c < C; ++c) {
        double sum = 0.0, sq = 0.0;  // the same float inputs, in double, in two passes
        for (std::int64_t n = 0; n < batch; ++n)
          for (std::int64_t i = 0; i < hw; ++i)
            sum += x[static_cast<std::size_t>((n * C + c) * hw + i)];
        const double m = static_cast<double>(batch * hw), mean = sum / m;
        for (std::int64_t n = 0; n < batch; ++n)
          for (std::int64_t i = 0; i < hw; ++i) {
            const double d = x[static_cast<std::size_t>((n * C + c) * hw + i)] - mean;
            sq += d * d;
          }
        const double var = sq / m;  // about 1 + 5 (the plane means 0, 3, 6, 9 spread by 5)
        BOOST_TEST(var > 5.0);
        BOOST_TEST(std::abs(bn.running_var()[c] - var * m / (m - 1.0)) < 1e-4 * var);
        for (std::int64_t n = 0; n < batch; ++n)
          for (std::int64_t i = 0; i < hw; ++i) {
            const std::size_t at = static_cast<std::size_t>((n * C + c) * hw + i);
            const double want = (x[at] - mean) / std::sqrt(var + 1e-5);
            BOOST_CHECK_MESSAGE(std::abs(y[at] - want) < 2e-3,
                                "y[" << at << "] " << y[at] << " vs " << want);
          }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_eval_mode_uses_running_statistics) {
  nn::BatchNorm bn({2, 1, 1});
  ParameterStore store;
  lbt::test::bind_fresh(bn, store, "bn", 0);
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

BOOST_AUTO_TEST_CASE(backward_masked_is_the_gradient_through_a_relu_after_the_residual_sum) {
  // y = relu(bn(x) + r): backward_masked(x, y, dy) gives masked_dy = dy [y > 0] and bn's
  // backward of it, in both modes; and finite differences through the whole expression.
  const nn::Shape3 shape{3, 2, 3};
  const std::int64_t batch = 4, n = batch * 18;
  for (bool train : {true, false}) {
    nn::BatchNorm bn(shape);
    ParameterStore store;
    lbt::test::bind_fresh(bn, store, "b", 11);
    bn.running_mean()[2] = -0.5f, bn.running_var()[0] = 3.0f;
    auto noise = normal_vector(store.num_params(), 99, 0.3f);
    for (std::size_t i = 0; i < store.num_params(); ++i) store.params()[i] += noise[i];
    auto x = normal_vector(n, 60, 2.0f);
    const auto r = normal_vector(n, 61), dy = normal_vector(n, 62);
    std::vector<float> y(n), dx(n), masked(n), dx_ref(n), masked_ref(n);
    bn.forward_fused(x.data(), y.data(), batch, train, r.data(), true);
    bn.backward_masked(x.data(), y.data(), dy.data(), masked.data(), dx.data(), batch, false);
    const std::vector<float> grads(store.grads().begin(), store.grads().end());
    std::size_t zeros = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      masked_ref[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      zeros += y[i] <= 0.0f;
    }
    BOOST_TEST(zeros > 10u);
    bn.backward(x.data(), nullptr, masked_ref.data(), dx_ref.data(), batch, false);
    for (std::int64_t i = 0; i < n; ++i) {
      BOOST_TEST(masked[i] == masked_ref[i]);
      BOOST_TEST(dx[i] == dx_ref[i], boost::test_tools::tolerance(1e-5f));
    }
    for (std::size_t i = 0; i < grads.size(); ++i)
      BOOST_TEST(grads[i] == store.grads()[i], boost::test_tools::tolerance(1e-5f));
    // d/dx of sum dy * relu(bn(x) + r) by central differences, on inputs drawn until no
    // difference straddles the ReLU's kink.
    for (std::uint64_t seed = 70;; ++seed) {
      BOOST_REQUIRE_MESSAGE(seed < 120, "no inputs without a kink in 50 draws");
      x = normal_vector(n, seed, 2.0f);
      bn.forward_fused(x.data(), y.data(), batch, train, r.data(), true);
      bn.backward_masked(x.data(), y.data(), dy.data(), masked.data(), dx.data(), batch, false);
      auto loss = [&] {
        std::vector<float> out(n);
        bn.forward_fused(x.data(), out.data(), batch, train, r.data(), true);
        double s = 0.0;
        for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(dy[i]) * out[i];
        return s;
      };
      const auto check = lbt::test::check_kink_aware(x.data(), x.size(), loss, dx.data(), 1e-3);
      if (check.kinked) continue;
      BOOST_TEST(check.r.max_error < lbt::test::kTolerance,
                 "dx[" << check.r.worst_index << "]: " << check.r.worst_analytic << " vs "
                       << check.r.worst_numeric);
      break;
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
