// The sweep plan (experiments/sweep/sweep_plan.hpp): its quasi-random LR search and the plan a
// config turns into. The critical-batch fit's own tests are tests/analysis/test_critical_batch.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "core/error.hpp"
#include "core/toml_text.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "trainer/config/run_config.hpp"

using namespace lbt::experiments;

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

// sweep.slurm_* as sbatch reads them: they went into sweep.sbatch unchecked, and sbatch refused
// the script at submission (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(slurm_settings_sbatch_would_refuse_are_refused_naming_the_key) {
  const auto message = [](const std::string& sets) {
    lbt::Config c =
        lbt::Config::from_string("[sweep]\nbatch_sizes = [32]\nmax_steps = 10\n" + sets);
    try {
      read_sweep_settings(c, {}, 0, "val_accuracy>=0.5");
    } catch (const lbt::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  for (const char* time : {"abc", "1:2:3:4", "-5", "2-", "12h", ""})
    BOOST_TEST(message("slurm_time = \"" + std::string(time) + "\"\n").find("sweep.slurm_time") !=
                   std::string::npos,
               time);
  for (const char* time : {"90", "30:00", "02:00:00", "1-12", "2-00:30:00", "UNLIMITED"})
    BOOST_TEST(message("slurm_time = \"" + std::string(time) + "\"\n") == "<accepted>", time);
  BOOST_TEST(message("slurm_cpus_per_task = -3\n").find("sweep.slurm_cpus_per_task must be >= 1") !=
             std::string::npos);
  BOOST_TEST(message("slurm_options = [\"--partition=gpu\", \"bad option\"]\n")
                 .find("sweep.slurm_options must be sbatch options") != std::string::npos);
}

// A run or sweep written before lbt printed floats short (lr = 0.050000000000000003) resumes
// under today's config.toml (lr = 0.05): the comparison is of values, not of their digits.
BOOST_AUTO_TEST_CASE(a_config_printed_with_seventeen_digits_compares_equal_to_its_short_form) {
  const std::string older = "[optimizer]\nlr = 0.050000000000000003\nmilestones = [ 8.0 ]\n";
  const std::string today = lbt::toml_text(toml::parse(older));
  BOOST_TEST(today.find("lr = 0.05\n") != std::string::npos, today);
  BOOST_TEST((flatten_config(older) == flatten_config(today)));
  BOOST_CHECK_NO_THROW(refuse_changed_config("run", older, today));
  BOOST_CHECK_THROW(refuse_changed_config("run", older, "[optimizer]\nlr = 0.05000000000000001\n"),
                    lbt::ConfigError);
}

// toml++ prints an array past ~120 characters over several lines; a change inside it is a
// change (read line by line, the value was "[" before and after, and a resume or two MPI ranks
// with other milestones went ahead).
BOOST_AUTO_TEST_CASE(a_change_inside_an_array_printed_over_lines_is_a_change) {
  const auto printed = [](const std::string& third) {
    std::string list = "[schedule]\nmilestones = [";
    for (int i = 0; i < 17; ++i)
      list += (i ? ", " : "") + (i == 2 ? third : std::to_string(100 * i + 7) + ".5");
    return lbt::toml_text(toml::parse(list + "]\ndecay = 'multistep'\n"));
  };
  const std::string before = printed("300.5"), after = printed("110.5");
  BOOST_TEST_REQUIRE(before.find("milestones = [\n") != std::string::npos, before);
  const auto flat = flatten_config(before);
  BOOST_TEST(flat.at("schedule.milestones").find("1607.5") != std::string::npos);
  BOOST_TEST(flat.at("schedule.decay") == "'multistep'");  // the key after the array
  BOOST_TEST(flat.at("schedule.milestones") != flatten_config(after).at("schedule.milestones"));
  BOOST_CHECK_THROW(refuse_changed_config("run", before, after), lbt::ConfigError);
  BOOST_CHECK_NO_THROW(refuse_changed_config("run", before, before));
}
