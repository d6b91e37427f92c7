// noise/: two-batch and per-example estimators against hand-computed values and closed forms
// (McCandlish et al. 2018, arXiv:1812.06162, App. A.1), end to end through the trainer.
#include <boost/test/unit_test.hpp>

#include <array>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "noise/gradient_noise.hpp"
#include "noise/hessian_noise.hpp"
#include "noise/online_estimator.hpp"
#include "noise/per_example.hpp"
#include "noise/per_example_rule.hpp"
#include "noise/runs.hpp"
#include "support/recording_device.hpp"
#include "support/tolerance.hpp"
#include "trainer/comm/local_communicator.hpp"

using namespace lbt;
using lbt::test::close;

BOOST_AUTO_TEST_CASE(two_batch_estimate_matches_the_hand_computed_example) {
  // b = 32, B = 512, |G_b|^2 = 4.0, |G_B|^2 = 1.3:
  //   |G|^2 = (512*1.3 - 32*4)/480 = 537.6/480 = 1.12
  //   tr(Sigma) = 2.7 / (1/32 - 1/512) = 2.7 * 512/15 = 92.16;  B_simple = 92.16/1.12 = 82.2857
  const auto e = noise::two_batch_estimate(32, 4.0, 512, 1.3);
  BOOST_TEST(close(e.G_sq, 1.12, 1e-12, 1e-12));
  BOOST_TEST(close(e.trace_sigma, 92.16, 1e-12, 1e-12));
  BOOST_TEST(close(e.trace_sigma / e.G_sq, 82.2857142857, 1e-9, 1e-9));
}

BOOST_AUTO_TEST_CASE(two_batch_estimate_inverts_the_expected_norms_exactly) {
  // E|G_b|^2 = |G|^2 + tr(Sigma)/b for any batch size b
  for (double G_sq : {0.01, 2.5, 40.0}) {
    for (double tr : {0.5, 300.0, 1e4}) {
      const double b = 16, B = 1024;
      const auto e = noise::two_batch_estimate(b, G_sq + tr / b, B, G_sq + tr / B);
      BOOST_TEST_CONTEXT("G_sq " << G_sq << " tr " << tr) {
        BOOST_TEST(close(e.G_sq, G_sq, 1e-12, 1e-10));
        BOOST_TEST(close(e.trace_sigma, tr, 1e-12, 1e-10));
      }
    }
  }
}

// Micro-batch means m_0 = (1, 2, 2), m_1 = (3, 0, 4), m_2 = (2, 1, 2) (|m_k|^2 = 9, 25, 9) of
// b = 4 examples each, accumulated as the trainer does (A_k = sum_{j<=k} m_j / 3), B = 12:
//   G = (6, 3, 8) / 3, |G_B|^2 = 109/9.
//   all:   |G_b|^2 = 43/3: |G|^2 = (12*109/9 - 4*43/3)/8 = 11,    tr = (43/3 - 109/9)*6 = 40/3
//   first: |G_b|^2 = 9:    |G|^2 = (12*109/9 - 4*9)/8 = 41/3,    tr = (9 - 109/9)*6 = -56/3
BOOST_AUTO_TEST_CASE(micro_batch_two_batch_form_uses_every_or_the_first_micro_batch) {
  const std::vector<Segment> segments = {make_segment("w", 0, 2, ParamKind::kWeight),
                                         make_segment("b", 2, 1, ParamKind::kBias)};
  const float m[3][3] = {{1, 2, 2}, {3, 0, 4}, {2, 1, 2}};
  struct Case {
    bool all;
    double G_sq, trace;
  };
  for (const Case c : {Case{true, 11.0, 40.0 / 3}, Case{false, 41.0 / 3, -56.0 / 3}}) {
    BOOST_TEST_CONTEXT((c.all ? "all" : "first")) {
      noise::OnlineOptions options;
      options.enabled = true;
      options.every = 1;
      options.per_example = false;
      options.all_micro_batches = c.all;
      options.per_segment = true;
      noise::OnlineEstimator estimator(options, /*world_size=*/1, /*micro_batch=*/4,
                                       /*accum=*/3, segments);
      std::vector<float> grads(3, 0.0f);
      for (const auto& mk : m) {
        for (int i = 0; i < 3; ++i) grads[i] += mk[i] / 3.0f;
        estimator.after_micro_batch(0, grads, {});
      }
      std::vector<double> slots(estimator.num_slots());
      estimator.before_allreduce(0, grads, slots);
      const double G_norm = std::sqrt(109.0 / 9.0);
      const auto* report = estimator.after_allreduce(0, grads, G_norm, slots);
      BOOST_TEST_REQUIRE(report != nullptr);
      BOOST_TEST_REQUIRE(report->estimators.size() == 1u);
      const auto& step = report->estimators[0].step;
      BOOST_TEST(close(step.G_sq, c.G_sq, 1e-5, 1e-5));
      BOOST_TEST(close(step.trace_sigma, c.trace, 1e-5, 1e-5));
      if (c.all) {  // per segment, the same sums over its coordinates: w = (0, 1), b = (2)
        // w: |G_b|^2 = (5 + 9 + 5)/3, |G_B|^2 = 5:    |G|^2 = 13/3, tr = 8
        // b: |G_b|^2 = (4 + 16 + 4)/3, |G_B|^2 = 64/9: |G|^2 = 20/3, tr = 16/3 (sums: 11, 40/3)
        const auto& seg = report->estimators[0].segments;
        BOOST_TEST_REQUIRE(seg.size() == 2u);
        BOOST_TEST(close(seg[0].G_sq, 13.0 / 3, 1e-5, 1e-5));
        BOOST_TEST(close(seg[0].trace_sigma, 8.0, 1e-5, 1e-5));
        BOOST_TEST(close(seg[1].G_sq, 20.0 / 3, 1e-5, 1e-5));
        BOOST_TEST(close(seg[1].trace_sigma, 16.0 / 3, 1e-5, 1e-5));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(per_example_estimate_is_the_sample_covariance_trace) {
  // five 3-d per-example gradients, sample covariance trace computed directly
  const double g[5][3] = {{1, 2, 0}, {0, -1, 3}, {2, 2, 2}, {-1, 0, 1}, {4, 1, -2}};
  double mean[3] = {0, 0, 0}, mean_sq = 0;
  for (auto& row : g) {
    for (int j = 0; j < 3; ++j) mean[j] += row[j] / 5.0, mean_sq += row[j] * row[j] / 5.0;
  }
  double ss = 0, G_sq = 0;
  for (auto& row : g)
    for (int j = 0; j < 3; ++j) ss += (row[j] - mean[j]) * (row[j] - mean[j]);
  for (double m : mean) G_sq += m * m;
  const auto e = noise::per_example_estimate(5, mean_sq, G_sq);
  BOOST_TEST(close(e.trace_sigma, ss / 4.0, 1e-12, 1e-12));
  BOOST_TEST(close(e.G_sq, G_sq - ss / 4.0 / 5.0, 1e-12, 1e-12));
}

BOOST_AUTO_TEST_CASE(per_example_norms_match_explicit_outer_products) {
  // one Linear(4 -> 3) layer, batch 6: per-example grads delta_n x_n^T and delta_n, built out
  const int B = 6, I = 4, O = 3;
  const double scale = 1.0 / 24;  // as if the loss averaged over 24 examples
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(B * I), dy(B * O);
  for (auto& v : x) v = normal(rng);
  for (auto& v : dy) v = normal(rng) * static_cast<float>(scale);
  noise::LinearTap tap{x.data(), dy.data(), I, O, 0, 1};
  std::vector<double> segs(2, 0.0);
  const double total = noise::add_per_example_sq_norms({&tap, 1}, B, scale, segs);
  double want_w = 0, want_b = 0;
  for (int n = 0; n < B; ++n) {
    for (int o = 0; o < O; ++o) {
      const double delta = dy[n * O + o] / scale;
      want_b += delta * delta;
      for (int i = 0; i < I; ++i) want_w += (delta * x[n * I + i]) * (delta * x[n * I + i]);
    }
  }
  BOOST_TEST(close(segs[0], want_w, 1e-9, 1e-5));
  BOOST_TEST(close(segs[1], want_b, 1e-9, 1e-5));
  BOOST_TEST(close(total, want_w + want_b, 1e-9, 1e-5));
  // The same layer without a bias (bias_segment -1): only the weight share, none added for b.
  noise::LinearTap no_bias{x.data(), dy.data(), I, O, 0, -1};
  std::vector<double> weight_only(1, 0.0);
  const double weight_total = noise::add_per_example_sq_norms({&no_bias, 1}, B, scale, weight_only);
  BOOST_TEST(close(weight_only[0], want_w, 1e-9, 1e-5));
  BOOST_TEST(close(weight_total, want_w, 1e-9, 1e-5));
  // What each GPU thread computes (noise/cuda/per_example_sums.cu), one example at a time, added
  // in example order: the same sums.
  double gpu_w = 0, gpu_b = 0;
  for (int n = 0; n < B; ++n)
    noise::add_example_row(x.data(), dy.data(), n, I, O, 1.0 / (scale * scale), gpu_w, gpu_b);
  BOOST_TEST(close(gpu_w, want_w, 1e-9, 1e-5));
  BOOST_TEST(close(gpu_b, want_b, 1e-9, 1e-5));
}

BOOST_AUTO_TEST_CASE(tracker_is_bias_corrected_and_its_interval_shrinks_to_the_constant) {
  noise::NoiseScaleTracker t(0.9);
  t.add({2.0, 100.0});
  BOOST_TEST(t.averaged().G_sq == 2.0);           // no pull toward 0 after one sample
  BOOST_TEST(std::isnan(t.averaged().b_simple));  // one measurement: no interval, not resolved
  for (int i = 0; i < 50; ++i) t.add({2.0, 100.0});
  const auto s = t.averaged();
  BOOST_TEST(close(s.b_simple, 50.0, 1e-12, 1e-12));
  BOOST_TEST(close(s.ci_low, 50.0, 1e-6, 0));
  BOOST_TEST(close(s.ci_high, 50.0, 1e-6, 0));
  BOOST_TEST(close(s.effective_samples, (1 + 0.9) / (1 - 0.9), 0.5, 0));  // 19 for long runs
}

BOOST_AUTO_TEST_CASE(tracker_state_round_trip_continues_the_same_ema) {
  // A checkpoint saves the sums mid-run; a fresh tracker loaded from them must report exactly
  // what the uninterrupted tracker reports after further samples.
  noise::NoiseScaleTracker original(0.9, 4), resumed(0.9, 4);
  for (int i = 0; i < 7; ++i) original.add({1.0 + i, 40.0 - 3.0 * i});
  std::vector<double> saved(original.state_size());
  original.save_state(saved);
  resumed.load_state(saved);
  for (int i = 0; i < 5; ++i) {
    original.add({0.5 * i, 10.0 + i});
    resumed.add({0.5 * i, 10.0 + i});
  }
  const auto a = original.averaged(), b = resumed.averaged();
  BOOST_TEST(a.b_simple == b.b_simple);
  BOOST_TEST(a.ci_low == b.ci_low);
  BOOST_TEST(a.samples == b.samples);
  BOOST_TEST(a.samples == 12);
  BOOST_TEST(original.now().G_sq == resumed.now().G_sq);  // the window continues too
  BOOST_TEST(original.now().samples == 4);
}

// Against mpmath at 30 digits (the root of I_{v/(v+t^2)}(v/2, 1/2) = 0.05; scipy 1.10's
// stats.t.ppf is off by up to 4e-10 there), fractional dof too (an EMA's effective count): the
// Cornish-Fisher expansion it replaced was 0.75% narrow at 2 dof and up to 18% wide between 1 and
// 2 (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(t_quantile_matches_mpmath) {
  for (auto [dof, want] : {std::pair{0.5, 164.55767348048851},
                           {1.0, 12.706204736174704},
                           {1.5, 6.0166631044279317},
                           {2.0, 4.3026527297494637},
                           {2.5, 3.5746548420036831},
                           {3.0, 3.1824463052837095},
                           {5.0, 2.5705818356363155},
                           {10.0, 2.2281388519862747},
                           {30.0, 2.0422724563012383},
                           {1000.0, 1.9623390808264085}}) {
    BOOST_TEST_CONTEXT("dof " << dof) {
      BOOST_TEST(close(noise::t_quantile_975(dof), want, 0, 1e-13));
    }
  }
  BOOST_TEST(std::isnan(noise::t_quantile_975(0.0)));
}

BOOST_AUTO_TEST_CASE(both_estimators_match_the_closed_form_on_synthetic_regression) {
  // w = 0 held fixed (lr 1e-30): 400 steps of global batch 256 = 8 micro-batches of 32
  comm::LocalCommunicator comm;
  const auto dir = test::noise_run_dir("synthetic");
  test::train_config(test::synthetic_toml(0, 256, 32, 400, 0.995), comm, dir);
  const auto problem = data::make_linear_regression(65536, 32, 2.0, 0);
  const double closed = test::b_simple_with_bias_at_zero(problem.w_star, 2.0);
  const auto lines = test::read_noise(dir);
  for (const char* name : {"two_batch", "per_example"}) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_REQUIRE(lines.count(name));
      const double got = lines.at(name).back()["b_simple_ema"].get<double>();
      BOOST_TEST_MESSAGE(name << ": B_simple " << got << " closed form " << closed);
      BOOST_TEST(close(got, closed, 0, 0.05));
    }
  }
}

BOOST_AUTO_TEST_CASE(interval_covers_the_truth_in_at_least_93_of_100_seeded_repeats) {
  comm::LocalCommunicator comm;
  int covered[4] = {0, 0, 0, 0};
  const int runs = 100;
  for (int seed = 0; seed < runs; ++seed) {
    const auto dir = test::noise_run_dir("coverage");
    test::train_config(test::synthetic_toml(seed, 256, 32, 120, 0.95), comm, dir);
    const auto problem = data::make_linear_regression(65536, 32, 2.0, seed);
    const double truth = test::dataset_b_simple_at_zero(problem.data);
    const auto lines = test::read_noise(dir);
    int k = 0;
    for (const char* name : {"two_batch", "per_example"}) {
      const auto& last = lines.at(name).back();
      for (const char* interval : {"b_simple_ci95", "b_simple_ema_ci95"}) {
        const double lo = last[interval][0].get<double>(), hi = last[interval][1].get<double>();
        BOOST_TEST(lo >= 0.0);
        covered[k++] += lo <= truth && truth <= hi;
      }
    }
  }
  BOOST_TEST_MESSAGE("coverage of " << runs << " (now, ema): two_batch " << covered[0] << ", "
                                    << covered[1] << "; per_example " << covered[2] << ", "
                                    << covered[3]);
  // 95% nominal: a calibrated interval covers 93 or more of 100 with probability ~0.88
  // (binomial(100, 0.95)); the issue asks for >= 93. Seeds are fixed, so the result is too
  // (measured: 96, 97; 97, 98).
  for (int c : covered) BOOST_TEST(c >= 93);
}

// noise.small_batches = "auto": micro-batch 0 alone at 2 micro-batches, every micro-batch from 3
// (noise/online_estimator.hpp says why); an explicit choice is kept.
BOOST_AUTO_TEST_CASE(auto_small_batches_take_micro_batch_0_at_accum_2_and_all_from_3) {
  const auto all_micro_batches = [](std::int64_t micro_batch, const char* extra) {
    Config config = Config::from_string(test::synthetic_toml(0, 64, micro_batch, 10, 0.9) + extra);
    config.set("noise.enabled=true");
    config.validate(trainer::run_schema());
    return trainer::resolve_run_config(config, 1).noise.all_micro_batches;
  };
  BOOST_TEST(!all_micro_batches(32, ""));  // accum 2
  BOOST_TEST(all_micro_batches(16, ""));   // accum 4
  BOOST_TEST(all_micro_batches(32, "small_batches = \"all\"\n"));
  BOOST_TEST(!all_micro_batches(16, "small_batches = \"first\"\n"));
}

BOOST_AUTO_TEST_CASE(one_process_without_accumulation_says_two_batch_is_unavailable) {
  comm::LocalCommunicator comm;
  const auto dir = test::noise_run_dir("unavailable");
  test::train_config(test::synthetic_toml(0, 64, 64, 20, 0.9), comm, dir);
  std::ifstream in(dir / "noise.jsonl");
  std::string first;
  std::getline(in, first);
  BOOST_TEST(first.find("accum_steps >= 2") != std::string::npos);
  const auto lines = test::read_noise(dir);
  BOOST_TEST(lines.count("two_batch") == 0u);
  BOOST_TEST(lines.count("per_example") == 1u);
}

BOOST_AUTO_TEST_CASE(fashion_mnist_mlp_estimators_agree_within_a_factor_of_1_5) {
  const std::string toml =
      "[model]\nspec = \"mlp:784-64-10\"\n"
      "[data]\ndataset = \"fashion-mnist\"\ntrain_limit = 6000\nvalidation_size = 1000\n"
      "[train]\nglobal_batch = 256\nmicro_batch = 32\nsteps = 80\neval_every = 1000\n"
      "log_every = 1000\nthreads = 2\nseed = 1\n"
      "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n"
      "[noise]\nenabled = true\nevery = 1\nestimator = \"both\"\nema = 0.9\n";
  comm::LocalCommunicator comm;
  const auto dir = test::noise_run_dir("fmnist");
  test::train_config(toml, comm, dir);
  const auto lines = test::read_noise(dir);
  const double two = lines.at("two_batch").back()["b_simple_ema"].get<double>();
  const double per = lines.at("per_example").back()["b_simple_ema"].get<double>();
  BOOST_TEST_MESSAGE("Fashion-MNIST step 79: two_batch " << two << ", per_example " << per);
  BOOST_TEST(two > 0.0);
  BOOST_TEST(per > 0.0);
  BOOST_TEST(std::max(two, per) / std::min(two, per) <= 1.5);
}

BOOST_AUTO_TEST_CASE(finite_difference_hvp_is_exact_on_a_quadratic) {
  const std::vector<double> H = {2, 1, 1, 3};
  noise::GradientFn grad = [&](std::span<const float> t, std::span<float> out) {
    out[0] = static_cast<float>(H[0] * t[0] + H[1] * t[1]);
    out[1] = static_cast<float>(H[2] * t[0] + H[3] * t[1]);
  };
  std::vector<float> theta = {1.0f, -2.0f}, v = {0.3f, 0.7f}, Hv(2), scratch;
  noise::hessian_vector_product(grad, theta, v, Hv, scratch);
  BOOST_TEST(close(Hv[0], 2 * 0.3 + 0.7, 1e-4, 1e-3));
  BOOST_TEST(close(Hv[1], 0.3 + 3 * 0.7, 1e-4, 1e-3));
}

// The backend seam (core/device.hpp): the estimator's gradient copy (small_batches = "all" with
// one process) is allocated on the model's device; a device whose memory the hooks cannot read
// is refused when the estimator is on, and is no concern when it is off.
BOOST_AUTO_TEST_CASE(online_estimator_allocates_on_the_given_device) {
  const std::vector<Segment> segments = {make_segment("w", 0, 3, ParamKind::kWeight)};
  noise::OnlineOptions options;
  options.enabled = true;
  options.per_example = false;
  options.all_micro_batches = true;
  test::RecordingDevice device;
  noise::OnlineEstimator estimator(options, 1, 4, 3, segments, {}, device);
  BOOST_TEST(device.allocations == std::vector<std::size_t>{3}, boost::test_tools::per_element());
  test::RecordingDevice elsewhere(/*host_memory=*/false);
  BOOST_CHECK_THROW(noise::OnlineEstimator(options, 1, 4, 3, segments, {}, elsewhere), lbt::Error);
  options.enabled = false;
  BOOST_CHECK_NO_THROW(noise::OnlineEstimator(options, 1, 4, 3, segments, {}, elsewhere));
}
