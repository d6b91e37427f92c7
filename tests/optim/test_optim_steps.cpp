// optim/: one or two steps of every optimizer and variant on a 3-segment table (with a bias),
// expected values computed in the test from each paper's formulas; the pure trust-ratio helpers.
#include <boost/test/unit_test.hpp>

#include <malloc.h>

#include <cmath>

#include "optim/lars.hpp"
#include "optim/trust_ratio.hpp"
#include "optim_fixture.hpp"
#include "support/tolerance.hpp"

using namespace lbt;
using lbt::test::build;
using lbt::test::do_step;
using lbt::test::SmallProblem;

namespace {

// The reference optimizers allocate whole-segment double vectors every step; glibc would
// mmap/munmap each one (and fault its pages in again), which made the suite 3x slower.
struct KeepFreedMemoryInTheHeap {
  KeepFreedMemoryInTheHeap() {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
  }
};
BOOST_TEST_GLOBAL_FIXTURE(KeepFreedMemoryInTheHeap);

std::vector<double> as_double(const std::vector<float>& x) {
  return {x.begin(), x.end()};
}

void check_params(const std::vector<float>& got, const std::vector<double>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_CHECK_MESSAGE(test::close(got[i], want[i], 1e-6, 1e-5),
                        "param " << i << ": " << got[i] << " vs " << want[i]);
}

bool is_weight(std::size_t i) {
  return i < 4 || i >= 6;
}  // fc.bias is [4, 6)

}  // namespace

BOOST_AUTO_TEST_CASE(trust_ratio_is_one_when_either_norm_is_zero) {
  BOOST_TEST(optim::trust_ratio(0.0, 2.0, 0.001, 0.0) == 1.0);
  BOOST_TEST(optim::trust_ratio(3.0, 0.0, 0.001, 0.0) == 1.0);
  BOOST_TEST(optim::trust_ratio(3.0, 2.0, 0.5, 0.0) == 0.75);
  BOOST_TEST(optim::trust_ratio(3.0, 2.0, 1.0, 1.0) == 1.0);
  BOOST_TEST(optim::larc_clip(0.5, 0.1) == 1.0);
  BOOST_TEST(optim::larc_clip(0.05, 0.1) == 0.5);
  optim::PhiOptions clamp{optim::Phi::kClamp, 0.1, 2.0};
  BOOST_TEST(optim::apply_phi(5.0, clamp) == 2.0);
  BOOST_TEST(optim::apply_phi(0.01, clamp) == 0.1);
  BOOST_TEST(optim::apply_phi(5.0, optim::PhiOptions{}) == 5.0);
}

// LARS's phi = clamp bounds |w| / |u| and then eta multiplies: with eta = 0.001 and the
// default [0.01, 10], a ratio of 1.5 keeps its local LR of 0.0015 (clamped after eta, as before,
// it became 0.01) and a ratio of 1000 becomes 0.001 x 10.
BOOST_AUTO_TEST_CASE(lars_clamps_the_ratio_before_the_trust_coefficient) {
  optim::LarsOptions o;
  o.phi = {optim::Phi::kClamp, 0.01, 10.0};
  o.trust_coefficient = 0.001;
  BOOST_TEST(optim::lars_local_lr(o, 3.0, 2.0, 0.0, 0.0) == 0.001 * 1.5);
  BOOST_TEST(optim::lars_local_lr(o, 3000.0, 3.0, 0.0, 0.0) == 0.001 * 10.0);
  BOOST_TEST(optim::lars_local_lr(o, 3.0, 3000.0, 0.0, 0.0) == 0.001 * 0.01);
  BOOST_TEST(optim::lars_local_lr(o, 0.0, 3.0, 0.0, 0.0) == 1.0);  // safe_zero_norm
  o.denominator = optim::LarsDenominator::kExact;                  // |g + beta w| = 4
  BOOST_TEST(optim::lars_local_lr(o, 3.0, 2.0, 4.0, 0.5) == 0.001 * 0.75);
}

// PyTorch SGD: g' = g + wd w; buf = g' (step 0), mu buf + (1 - dampening) g'; w -= lr buf.
BOOST_AUTO_TEST_CASE(sgd_heavy_ball_with_dampening_and_decay_two_steps_by_hand) {
  SmallProblem p;
  const double lr = 0.1, mu = 0.9, damp = 0.1, wd = 0.01;
  auto opt =
      build("[optimizer]\nname='momentum'\nmomentum=0.9\ndampening=0.1\nweight_decay=0.01\n", 9);
  auto w = as_double(p.w);
  std::vector<double> buf(9);
  for (int t = 0; t < 2; ++t) {
    for (std::size_t i = 0; i < 9; ++i) {
      const double gp = p.g[i] + (is_weight(i) ? wd : 0.0) * w[i];
      buf[i] = t == 0 ? gp : mu * buf[i] + (1 - damp) * gp;
      w[i] -= lr * buf[i];
    }
    do_step(*opt, p.w, p.g, p.segments, lr, t);
  }
  check_params(p.w, w);
}

BOOST_AUTO_TEST_CASE(sgd_nesterov_two_steps_by_hand) {
  SmallProblem p;
  const double lr = 0.1, mu = 0.8, wd = 0.05;
  auto opt = build("[optimizer]\nname='nesterov'\nmomentum=0.8\nweight_decay=0.05\n", 9);
  auto w = as_double(p.w);
  std::vector<double> buf(9);
  for (int t = 0; t < 2; ++t) {
    for (std::size_t i = 0; i < 9; ++i) {
      const double gp = p.g[i] + (is_weight(i) ? wd : 0.0) * w[i];
      buf[i] = t == 0 ? gp : mu * buf[i] + gp;
      w[i] -= lr * (gp + mu * buf[i]);
    }
    do_step(*opt, p.w, p.g, p.segments, lr, t);
  }
  check_params(p.w, w);
}

BOOST_AUTO_TEST_CASE(plain_sgd_without_momentum_is_w_minus_lr_g) {
  SmallProblem p;
  auto opt = build("[optimizer]\nname='sgd'\nmomentum=0.0\n", 9);
  BOOST_TEST(opt->state().buffers().empty());
  std::vector<double> w(9);
  for (std::size_t i = 0; i < 9; ++i) w[i] = p.w[i] - 0.5 * p.g[i];
  do_step(*opt, p.w, p.g, p.segments, 0.5, 0);
  check_params(p.w, w);
}

// Adam, step t = 1: m_hat = g', v_hat = g'^2, so w -= lr g' / (|g'| + eps) (or / sqrt(g'^2 + eps)).
BOOST_AUTO_TEST_CASE(adam_first_step_with_coupled_decay_and_both_eps_placements) {
  for (bool inside : {false, true}) {
    BOOST_TEST_CONTEXT("eps_inside_sqrt=" << inside) {
      SmallProblem p;
      const double lr = 0.01, eps = 1e-3, wd = 0.1;
      auto opt = build(
          std::string("[optimizer]\nname='adam'\neps=1e-3\nweight_decay=0.1\neps_inside_sqrt=") +
              (inside ? "true" : "false") + "\n",
          9);
      std::vector<double> w(9);
      for (std::size_t i = 0; i < 9; ++i) {
        const double gp = p.g[i] + (is_weight(i) ? wd : 0.0) * p.w[i];
        w[i] = p.w[i] - lr * gp / (inside ? std::sqrt(gp * gp + eps) : std::abs(gp) + eps);
      }
      do_step(*opt, p.w, p.g, p.segments, lr, 0);
      check_params(p.w, w);
    }
  }
}

// Two Adam steps with g then 2g: m = (1-b1)(b1 g + 2g), v = (1-b2)(b2 g^2 + 4 g^2), t = 2.
BOOST_AUTO_TEST_CASE(adamw_two_steps_with_bias_correction_and_decoupled_decay) {
  SmallProblem p;
  const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
  auto opt = build("[optimizer]\nname='adamw'\nbeta2=0.99\nweight_decay=0.1\n", 9);
  std::vector<double> w(9);
  for (std::size_t i = 0; i < 9; ++i) {
    const double g = p.g[i], d = is_weight(i) ? wd : 0.0;
    const double w1 = p.w[i] - lr * (g / (std::abs(g) + eps) + d * p.w[i]);
    const double m = (1 - b1) * (b1 * g + 2 * g), v = (1 - b2) * (b2 * g * g + 4 * g * g);
    const double m_hat = m / (1 - b1 * b1), v_hat = v / (1 - b2 * b2);
    w[i] = w1 - lr * (m_hat / (std::sqrt(v_hat) + eps) + d * w1);
  }
  do_step(*opt, p.w, p.g, p.segments, lr, 0);
  std::vector<float> g2(p.g);
  for (float& x : g2) x *= 2;
  do_step(*opt, p.w, g2, p.segments, lr, 1);
  check_params(p.w, w);
}

// LARS Alg. 1 over two steps with different lr, for each denominator and lr placement:
// local_lr = eta |w| / (|g| + beta |w|) (paper) or eta |w| / |g + beta w| (exact).
BOOST_AUTO_TEST_CASE(lars_two_steps_by_hand_for_each_denominator_and_lr_placement) {
  const double eta = 0.01, beta = 0.01, mu = 0.9;
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {{0, 4}, {4, 6}, {6, 9}};
  for (std::string denominator : {"paper", "exact"}) {
    for (std::string placement : {"before_momentum", "after_momentum"}) {
      BOOST_TEST_CONTEXT(denominator << ", " << placement) {
        SmallProblem p;
        auto opt = build(
            "[optimizer]\nname='lars'\nweight_decay=0.01\n[optimizer.lars]\ntrust_coefficient=0."
            "01\n"
            "denominator='" +
                denominator + "'\nlr_placement='" + placement + "'\n",
            9);
        auto w = as_double(p.w);
        std::vector<double> v(9);
        const double lrs[2] = {0.5, 0.2};
        for (int t = 0; t < 2; ++t) {
          for (auto [b, e] : ranges) {
            const bool weight = b != 4;
            const double bt = weight ? beta : 0.0;
            std::vector<double> g(p.g.begin(), p.g.end()), d(9);
            for (std::size_t i = b; i < e; ++i) d[i] = g[i] + bt * w[i];
            double local_lr = 1.0;  // the bias segment has no trust ratio
            if (weight) {
              const double den = denominator == "paper"
                                     ? test::norm(g, b, e) + bt * test::norm(w, b, e)
                                     : test::norm(d, b, e);
              local_lr = eta * test::norm(w, b, e) / den;
            }
            for (std::size_t i = b; i < e; ++i) {
              if (placement == "before_momentum") {
                v[i] = mu * v[i] + lrs[t] * local_lr * d[i];
                w[i] -= v[i];
              } else {
                v[i] = mu * v[i] + local_lr * d[i];
                w[i] -= lrs[t] * v[i];
              }
            }
          }
          do_step(*opt, p.w, p.g, p.segments, lrs[t], t);
        }
        check_params(p.w, w);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(lars_clamps_the_ratio_and_moves_a_zero_segment_at_the_global_rate) {
  SmallProblem p;
  std::fill(p.w.begin(), p.w.begin() + 4, 0.0f);  // fc.weight at zero: ratio 1 (safe rule)
  // out.weight: eta |w| / (|g| + beta|w|) = 1 * 1.75 / 0.37 ~ 4.7, clamped to 2.
  auto opt = build(
      "[optimizer]\nname='lars'\nmomentum=0.0\nweight_decay=0.0\n[optimizer.lars]\n"
      "trust_coefficient=1.0\nphi='clamp'\nclamp_min=0.0\nclamp_max=2.0\n",
      9);
  const double lr = 0.1;
  std::vector<double> w(9);
  for (std::size_t i = 0; i < 9; ++i) w[i] = p.w[i] - lr * (i >= 6 ? 2.0 : 1.0) * p.g[i];
  do_step(*opt, p.w, p.g, p.segments, lr, 0);
  check_params(p.w, w);
}

// Apex LARC: g <- (g + wd w) * factor, factor = min(local_lr / lr, 1) (clip) or local_lr (scale),
// local_lr = c |w| / (|g| + wd |w| + eps); base SGD without momentum then steps w -= lr g.
BOOST_AUTO_TEST_CASE(larc_clip_and_scale_one_step_by_hand) {
  const double c = 0.02, wd = 0.01, eps = 1e-8, lr = 0.05;
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {{0, 4}, {4, 6}, {6, 9}};
  for (std::string mode : {"clip", "scale"}) {
    BOOST_TEST_CONTEXT(mode) {
      SmallProblem p;
      p.g[2] = -3.0f;  // fc.weight: big gradient, local_lr / lr < 1; out.weight: > 1 (clipped)
      auto opt = build(
          "[optimizer]\nname='larc'\nmomentum=0.0\nweight_decay=0.01\n[optimizer.larc]\nmode='" +
              mode + "'\nbase='sgd'\n",
          9);
      auto w = as_double(p.w);
      std::vector<double> g(p.g.begin(), p.g.end()), want(9);
      int clipped = 0;
      for (auto [b, e] : ranges) {
        const bool weight = b != 4;
        const double d = weight ? wd : 0.0;
        double factor = 1.0;
        if (weight) {
          const double local_lr =
              c * test::norm(w, b, e) / (test::norm(g, b, e) + d * test::norm(w, b, e) + eps);
          factor = mode == "clip" ? std::min(local_lr / lr, 1.0) : local_lr;
          clipped += local_lr / lr >= 1.0;
        }
        for (std::size_t i = b; i < e; ++i) want[i] = w[i] - lr * factor * (g[i] + d * w[i]);
      }
      BOOST_TEST(clipped == 1);  // one segment on each side of the clip
      do_step(*opt, p.w, p.g, p.segments, lr, 0);
      check_params(p.w, want);
    }
  }
}

// LAMB Alg. 2, t = 1: m_hat = g, v_hat = g^2, r = g / (|g| + eps), u = r + lambda w,
// w -= lr * phi(|w| / |u|) * u; the bias segment (no trust ratio, no decay) takes lr * r.
BOOST_AUTO_TEST_CASE(lamb_first_step_by_hand_for_scopes_phi_and_bias_correction) {
  const double lr = 0.01, lambda = 0.1, eps = 1e-6, b1 = 0.9, b2 = 0.999;
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {{0, 4}, {4, 6}, {6, 9}};
  struct Variant {
    std::string toml;
    bool clamp, bias_correction, decayed_scope_no_decay;
  };
  const std::vector<Variant> variants = {
      {"", false, true, false},
      {"phi='clamp'\nclamp_min=0.5\nclamp_max=1.5\n", true, true, false},
      {"bias_correction=false\n", false, false, false},
      {"scope='decayed'\n", false, true, false},
  };
  for (const auto& variant : variants) {
    BOOST_TEST_CONTEXT(variant.toml) {
      SmallProblem p;
      auto opt =
          build("[optimizer]\nname='lamb'\nweight_decay=0.1\n[optimizer.lamb]\n" + variant.toml, 9);
      auto w = as_double(p.w);
      std::vector<double> u(9), want(9);
      for (auto [b, e] : ranges) {
        const bool weight = b != 4;
        for (std::size_t i = b; i < e; ++i) {
          const double g = p.g[i];
          const double m_hat = variant.bias_correction ? g : (1 - b1) * g;
          const double v_hat = variant.bias_correction ? g * g : (1 - b2) * g * g;
          u[i] = m_hat / (std::sqrt(v_hat) + eps) + (weight ? lambda : 0.0) * w[i];
        }
        double ratio = weight ? test::norm(w, b, e) / test::norm(u, b, e) : 1.0;
        if (weight && variant.clamp) ratio = std::clamp(ratio, 0.5, 1.5);
        for (std::size_t i = b; i < e; ++i) want[i] = w[i] - lr * ratio * u[i];
      }
      do_step(*opt, p.w, p.g, p.segments, lr, 0);
      check_params(p.w, want);
    }
  }
}

BOOST_AUTO_TEST_CASE(describe_names_every_switch) {
  auto lars = build("[optimizer]\nname='lars'\n", 9)->describe();
  for (const char* s : {"momentum=", "wd=", "eta=", "eps=", "denominator=", "lr_placement=",
                        "safe_zero_norm=", "phi="})
    BOOST_TEST(lars.find(s) != std::string::npos, lars << " lacks " << s);
  auto lamb = build("[optimizer]\nname='lamb'\n", 9)->describe();
  for (const char* s : {"b1=", "b2=", "eps=", "bias_correction=", "wd=", "scope=", "phi="})
    BOOST_TEST(lamb.find(s) != std::string::npos, lamb << " lacks " << s);
  auto larc = build("[optimizer]\nname='larc'\n[optimizer.larc]\nbase='adamw'\n", 9)->describe();
  for (const char* s : {"mode=", "trust_coefficient=", "base=AdamW(", "eps_inside_sqrt="})
    BOOST_TEST(larc.find(s) != std::string::npos, larc << " lacks " << s);
  auto sgd = build("[optimizer]\nname='nesterov'\n", 9)->describe();
  for (const char* s : {"momentum=", "dampening=", "nesterov=true", "wd="})
    BOOST_TEST(sgd.find(s) != std::string::npos, sgd << " lacks " << s);
}
