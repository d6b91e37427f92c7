// The critical-batch fit (experiments/critical_batch.hpp) against data made from the formula
// S = S_min (1 + B_noise / B) with multiplicative noise, and the sweep plan's LR search.
#define BOOST_TEST_MODULE experiments
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "experiments/critical_batch.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/sweep_plan.hpp"
#include "trainer/run_config.hpp"

using namespace lbt::experiments;

namespace {

std::vector<ScalingPoint> formula_points(double S_min, double B_noise, double sigma,
                                         unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> eps(0.0, sigma);
  std::vector<ScalingPoint> pts;
  for (double B = 16; B <= 65536; B *= 2)
    pts.push_back({B, S_min * (1 + B_noise / B) * std::exp(eps(rng))});
  return pts;
}

bool within(double got, double want, double rtol) {
  return std::abs(got - want) <= rtol * std::abs(want);
}

}  // namespace

BOOST_AUTO_TEST_CASE(fit_recovers_exact_parameters_from_noiseless_points) {
  const auto f = fit_critical_batch(formula_points(150.0, 2000.0, 0.0, 1));
  BOOST_CHECK_MESSAGE(within(f.S_min, 150.0, 1e-6), "S_min " << f.S_min);
  BOOST_CHECK_MESSAGE(within(f.B_noise, 2000.0, 1e-6), "B_noise " << f.B_noise);
  BOOST_CHECK_MESSAGE(within(f.E_min, 150.0 * 2000.0, 1e-6), "E_min " << f.E_min);
  BOOST_CHECK_MESSAGE(within(f.B_crit, f.E_min / f.S_min, 1e-12), "B_crit " << f.B_crit);
  BOOST_TEST(f.rms_log_residual < 1e-8);
}

BOOST_AUTO_TEST_CASE(fit_recovers_S_min_and_B_noise_within_5_percent_under_multiplicative_noise) {
  const double S_min = 200.0, B_noise = 1000.0;
  for (unsigned seed : {1u, 2u, 3u}) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      const auto pts = formula_points(S_min, B_noise, 0.03, seed);
      const auto f = fit_critical_batch(pts);
      BOOST_CHECK_MESSAGE(within(f.S_min, S_min, 0.05), "S_min " << f.S_min << " vs " << S_min);
      BOOST_CHECK_MESSAGE(within(f.B_noise, B_noise, 0.05),
                          "B_noise " << f.B_noise << " vs " << B_noise);
      BOOST_CHECK_MESSAGE(within(f.E_min, S_min * B_noise, 0.05), "E_min " << f.E_min);
      // Sensible intervals: they hold the point estimate and are not absurdly wide.
      const auto ci = bootstrap_critical_batch(pts, 1000, 0.95, seed);
      BOOST_TEST(ci.resamples > 900);
      BOOST_TEST(ci.S_min.lo <= f.S_min);
      BOOST_TEST(f.S_min <= ci.S_min.hi);
      BOOST_TEST(ci.B_crit.lo <= f.B_crit);
      BOOST_TEST(f.B_crit <= ci.B_crit.hi);
      BOOST_TEST(ci.S_min.hi / ci.S_min.lo < 1.5);
      BOOST_TEST(ci.B_crit.hi / ci.B_crit.lo < 2.0);
    }
  }
}

// Coverage over many noise draws: a nominal 95% percentile bootstrap over 13 batch sizes
// covers the truth less often than 95% (resampling few points understates the spread), so
// the check is that it holds the truth in most draws, not in every one.
BOOST_AUTO_TEST_CASE(bootstrap_intervals_contain_the_truth_in_most_noise_draws) {
  const double S_min = 200.0, B_noise = 1000.0;
  const int draws = 40;
  int s_hits = 0, b_hits = 0, e_hits = 0;
  for (int seed = 100; seed < 100 + draws; ++seed) {
    const auto ci =
        bootstrap_critical_batch(formula_points(S_min, B_noise, 0.03, seed), 400, 0.95, seed);
    s_hits += ci.S_min.lo <= S_min && S_min <= ci.S_min.hi;
    b_hits += ci.B_crit.lo <= B_noise && B_noise <= ci.B_crit.hi;
    e_hits += ci.E_min.lo <= S_min * B_noise && S_min * B_noise <= ci.E_min.hi;
  }
  BOOST_TEST_MESSAGE("coverage of 95% intervals over " << draws << " draws: S_min " << s_hits
                                                       << ", B_crit " << b_hits << ", E_min "
                                                       << e_hits);
  BOOST_TEST(s_hits >= 0.8 * draws);
  BOOST_TEST(b_hits >= 0.8 * draws);
  BOOST_TEST(e_hits >= 0.8 * draws);
}

BOOST_AUTO_TEST_CASE(fit_refuses_fewer_than_three_batch_sizes_with_a_hint) {
  std::vector<ScalingPoint> two = {{64, 1000}, {128, 520}, {128, 530}};
  try {
    fit_critical_batch(two);
    BOOST_FAIL("expected lbt::Error");
  } catch (const lbt::Error& e) {
    BOOST_TEST(std::string(e.what()).find("at least 3 batch sizes") != std::string::npos);
    BOOST_TEST(!e.hint().empty());
  }
  BOOST_CHECK_THROW(fit_critical_batch({{64, 1000}, {128, -1}, {256, 300}}), lbt::Error);
}

BOOST_AUTO_TEST_CASE(halton_sequence_matches_the_radical_inverse_by_hand) {
  BOOST_TEST(halton(1, 2) == 0.5);
  BOOST_TEST(halton(2, 2) == 0.25);
  BOOST_TEST(halton(3, 2) == 0.75);
  BOOST_TEST(std::abs(halton(5, 3) - (2.0 / 3 + 1.0 / 9)) < 1e-15);  // 5 = 12 in base 3
}

BOOST_AUTO_TEST_CASE(plan_scales_the_lr_prior_and_turns_the_example_budget_into_steps) {
  lbt::Config c = lbt::Config::from_string(R"(
[optimizer]
lr = 0.1
[train]
target = "val_loss<=0.5"
[schedule]
scaling = "sqrt"
reference_batch = 64
[sweep]
batch_sizes = [256, 64]
lr_multipliers = [0.5, 2.0]
max_examples = 6400
max_steps = 50
eval_every_examples = 640
)");
  const SweepSettings s = read_sweep_settings(c, {}, 0, "");
  const auto plan = make_plan(s);
  BOOST_REQUIRE_EQUAL(plan.size(), 4u);
  BOOST_TEST(plan[0].name == "64_0");
  BOOST_TEST(std::abs(plan[1].lr - 0.2) < 1e-12);            // prior 0.1 x 2
  BOOST_TEST(std::abs(plan[2].lr - 0.1 * 2 * 0.5) < 1e-12);  // sqrt(256/64) = 2
  BOOST_TEST(plan[0].steps == 50);                           // min(6400/64 = 100, 50)
  BOOST_TEST(plan[2].steps == 25);                           // 6400/256
  BOOST_TEST(plan[0].eval_every == 10);                      // 640/64
  BOOST_TEST(plan[2].eval_every == 2);                       // 640/256 = 2 (50 evals cap: 1)
  bool has_target = false;
  for (const auto& o : plan[0].overrides) has_target |= o == "train.target=val_loss<=0.5";
  BOOST_TEST(has_target);
  // Each trial is the base run at batch B with the same rule from the same reference batch:
  // the LR its schedule gives is the plan's, to rounding (no second scaling, no silent override).
  for (const auto& trial : plan) {
    BOOST_TEST_CONTEXT(trial.name) {
      lbt::Config t = c;
      for (const auto& o : trial.overrides) t.set(o);
      t.validate(lbt::experiments::lbt_schema());
      const auto run = lbt::trainer::resolve_run_config(t, 1);
      BOOST_TEST(run.schedule.reference_batch == 64);
      const double peak = lbt::trainer::run_schedule(run, {10, trial.steps}, nullptr)(0);
      BOOST_TEST(std::abs(peak - trial.lr) <= 4e-16 * trial.lr, peak << " vs " << trial.lr);
    }
  }
  // The sweep's own scaling rule is gone: a config that still has it is told what replaced it.
  lbt::Config old = lbt::Config::from_string("[sweep]\nlr_rule = \"sqrt\"\n");
  BOOST_CHECK_EXCEPTION(old.validate(lbt::experiments::lbt_schema()), lbt::ConfigError,
                        [](const lbt::ConfigError& e) {
                          return e.hint().find("schedule.scaling") != std::string::npos;
                        });

  lbt::Config log_uniform = lbt::Config::from_string(R"(
[sweep]
batch_sizes = [32]
lr_search = "log_uniform"
lr_trials = 5
lr_min_factor = 0.1
lr_max_factor = 10.0
search_momentum = true
max_steps = 10
)");
  const auto draws = make_plan(read_sweep_settings(log_uniform, {}, 0, "val_accuracy>=0.5"));
  BOOST_REQUIRE_EQUAL(draws.size(), 5u);
  const double prior = lr_prior(read_sweep_settings(log_uniform, {}, 0, "val_accuracy>=0.5"), 32);
  BOOST_TEST(std::abs(draws[0].lr - prior) < 1e-12 * prior);  // Halton(1) = 1/2: the middle
  for (const auto& t : draws) {
    BOOST_TEST(t.lr >= 0.1 * prior);
    BOOST_TEST(t.lr <= 10 * prior);
    BOOST_TEST(t.momentum >= 0.8);
    BOOST_TEST(t.momentum <= 0.99);
  }
}

BOOST_AUTO_TEST_CASE(plan_without_budget_or_target_is_refused) {
  lbt::Config c = lbt::Config::from_string("[sweep]\nbatch_sizes = [32]\n");
  BOOST_CHECK_THROW(read_sweep_settings(c, {}, 0, "val_accuracy>=0.5"), lbt::ConfigError);
  lbt::Config d = lbt::Config::from_string("[sweep]\nbatch_sizes = [32]\nmax_steps = 10\n");
  BOOST_CHECK_THROW(read_sweep_settings(d, {}, 0, ""), lbt::ConfigError);
}
