// Keys that mean something only under some settings, and the errors that name the key at fault.
// From the 2026-11-30 config audit: noise.every beside noise.enabled = false, decay_start beside a
// constant LR, no_trust_ratio beside SGD, the adaptive arm's rule without the arm and a LARS clamp
// under phi = identity were all taken without a word; train.divergence_factor = 0.5 made every run
// "diverged" at its first step; 2^62 steps of an adaptive batch "completed" at step 0; and a bad
// noise.every, sweep.momentum_max or decay_start was reported as another key.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "support/process_scratch.hpp"
#include "trainer/config/run_config.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& config_dir() {
  static const lbt::test::ProcessScratch dir(lbt::test::per_process("lbt_config_conditions"));
  return dir.path();
}

lbt::Config load(const std::string& toml, const std::vector<std::string>& sets = {},
                 std::ostream* notes = nullptr) {
  const fs::path path = config_dir() / "config.toml";
  std::ofstream(path) << toml;
  return lbt::experiments::load_config(path, sets, notes);
}

// The error loading and resolving `toml` with `sets` gives, or "" where it passes.
std::string error_of(const std::string& toml, const std::vector<std::string>& sets = {}) {
  try {
    lbt::Config config = load(toml, sets);
    lbt::trainer::resolve_run_config(config, 1);
  } catch (const lbt::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_setting_of_a_part_not_in_use_is_refused_and_its_default_passes) {
  const std::string off = "[noise]\nenabled = false\n";
  BOOST_TEST(contains(error_of(off + "every = 7\n"), "noise.every is not used with"));
  BOOST_TEST(error_of(off + "every = 10\n") == "");  // the default: every run directory holds it
  BOOST_TEST(error_of("[sweep]\nadaptive = true\n[noise]\nevery = 7\n") == "");  // the arm's
  BOOST_TEST(contains(error_of("[schedule]\ndecay_start = 5.0\n"), "schedule.decay_start"));
  BOOST_TEST(error_of("[schedule]\ndecay = \"cosine\"\ndecay_start = 5.0\n") == "");
  const std::string no_trust = "no_trust_ratio = [\"fc1.weight\"]\n";
  BOOST_TEST(contains(error_of("[optimizer]\n" + no_trust), "optimizer.no_trust_ratio"));
  BOOST_TEST(error_of("[optimizer]\nname = \"lars\"\n" + no_trust) == "");
  BOOST_TEST(contains(error_of("[sweep]\nadaptive_rule = \"sqrt\"\n"), "sweep.adaptive_rule"));
  BOOST_TEST(contains(error_of("[train]\nstop_at_target = true\n"), "train.stop_at_target"));
  BOOST_TEST(error_of("[train]\nstop_at_target = true\ntarget = \"val_loss<=0.5\"\n") == "");
  // A file's setting whose part the command line turns off is dropped, without a note: such
  // keys went unused without a word before, and a note per noise key buried the run's output.
  std::ostringstream notes;
  lbt::Config dropped =
      load("[noise]\nenabled = true\nevery = 7\n", {"noise.enabled=false"}, &notes);
  BOOST_TEST(notes.str() == "");
  BOOST_TEST(!dropped.has("noise.every"));
}

// A warmup's shape or start beside no warmup shaped nothing; the unit is how a length is
// written and stays free, and --set schedule.warmup=0 drops the file's warmup settings.
BOOST_AUTO_TEST_CASE(a_warmup_setting_without_a_warmup_is_refused) {
  const std::string error = error_of("[schedule]\nwarmup_kind = \"exponential\"\n");
  BOOST_TEST(contains(error,
                      "schedule.warmup_kind is not used with the default schedule.warmup "
                      "(it applies to schedule.warmup > 0)"),
             error);
  BOOST_TEST(contains(error_of("[schedule]\nwarmup = 0\nwarmup_start = 0.1\n"),
                      "schedule.warmup_start is not used with schedule.warmup = 0"));
  BOOST_TEST(contains(error_of("[schedule]\nwarmup_legw = true\n"), "schedule.warmup_legw"));
  BOOST_TEST(error_of("[schedule]\nwarmup = 0.0\nwarmup_unit = \"epochs\"\n") == "");
  const std::string goyal = "[schedule]\nwarmup = 2\nwarmup_from_base_lr = true\n";
  BOOST_TEST(error_of(goyal) == "");
  BOOST_TEST(error_of(goyal, {"schedule.warmup=0"}) == "");
  BOOST_TEST(!load(goyal, {"schedule.warmup=0"}).has("schedule.warmup_from_base_lr"));
}

BOOST_AUTO_TEST_CASE(a_resolved_config_loads_again_as_it_is) {
  for (const std::string toml : {"[noise]\nenabled = false\n", "[optimizer]\nname = \"lamb\"\n",
                                 "[optimizer]\nname = \"lars\"\n[noise]\nenabled = true\n"}) {
    lbt::Config config = load(toml);
    lbt::trainer::resolve_run_config(config, 1);
    BOOST_TEST(error_of(config.resolved_toml()) == "", toml);
  }
}

BOOST_AUTO_TEST_CASE(a_trust_ratio_clamp_needs_phi_clamp) {
  const std::string lars = "[optimizer]\nname = \"lars\"\n";
  const std::string error = error_of(lars + "lars.clamp_min = 5.0\nlars.clamp_max = 9.0\n");
  BOOST_TEST(contains(error, "optimizer.lars.phi must be \"clamp\""), error);
  BOOST_TEST(
      error_of(lars + "lars.phi = \"clamp\"\nlars.clamp_min = 5.0\nlars.clamp_max = 9.0\n") == "");
}

BOOST_AUTO_TEST_CASE(a_divergence_factor_below_one_is_refused) {
  BOOST_TEST(contains(error_of("[train]\ndivergence_factor = 0.5\n"), "must be >= 1"));
  BOOST_TEST(contains(error_of("[train]\ndivergence_factor = 0.999\n"), "must be >= 1"));
  BOOST_TEST(error_of("[train]\ndivergence_factor = 1.0\n") == "");  // above the untrained loss
}

BOOST_AUTO_TEST_CASE(steps_whose_examples_pass_64_bits_are_refused) {
  const auto budget_error = [](const std::string& toml) -> std::string {
    lbt::Config config = load(toml);
    const auto run = lbt::trainer::resolve_run_config(config, 1);
    try {
      lbt::trainer::step_budget(run.train, 1 << 20, 1);
    } catch (const lbt::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  const std::string steps_2_62 = "[train]\nsteps = 4611686018427387904\n";
  BOOST_TEST(budget_error(steps_2_62 + "global_batch = 1\n") == "");  // 2^62 examples fit
  const std::string error = budget_error(steps_2_62 + "global_batch = 2\n");
  BOOST_TEST(contains(error, "train.steps: 4611686018427387904 steps of up to 2 examples"), error);
  // A varying batch's budget counts its largest batch.
  BOOST_TEST(contains(budget_error("[train]\nsteps = 1152921504606846977\nbatch_schedule = "
                                   "\"steps\"\nmicro_batch = 0\nbatch_steps = \"0:4, 10:8\"\n"),
                      "steps of up to 8 examples"));
}

BOOST_AUTO_TEST_CASE(an_error_names_the_key_at_fault_and_a_file_only_for_its_own_keys) {
  const std::string noise = "[noise]\nenabled = true\n";
  const std::string every = error_of(noise, {"noise.every=50"});
  BOOST_TEST(every.starts_with("noise.every must be at most noise.window_steps / 3 = 33"), every);
  BOOST_TEST(contains(error_of(noise + "every = 50\nwindow_steps = 100\n"),
                      "noise.window_steps must be at least 3 x noise.every"));
  // A default the file never held is not the file's.
  const std::string phi =
      error_of("[optimizer]\nname = \"lars\"\n", {"optimizer.lars.clamp_min=5"});
  BOOST_TEST(phi.starts_with("optimizer.lars.phi"), phi);

  lbt::Config sweep = load(
      "[train]\ntarget = \"val_loss<=0.5\"\n[sweep]\nbatch_sizes = [64]\n"
      "lr_search = \"log_uniform\"\nsearch_momentum = true\nmomentum_max = 1.0\n");
  try {
    lbt::experiments::read_sweep_settings(sweep, {}, 0, "");
    BOOST_FAIL("momentum_max = 1 was taken");
  } catch (const lbt::ConfigError& e) {
    BOOST_TEST(contains(e.what(), "sweep.momentum_max must be in (sweep.momentum_min"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_decay_past_the_run_names_its_start_and_a_late_milestone_warns) {
  const auto schedule_text = [](const std::string& toml, std::int64_t steps) -> std::string {
    lbt::Config config = load(toml);
    const auto run = lbt::trainer::resolve_run_config(config, 1);
    std::ostringstream warnings;
    try {
      lbt::trainer::run_schedule(run, {steps, steps}, &warnings);
    } catch (const lbt::ConfigError& e) {
      return e.what();
    }
    return warnings.str();
  };
  const std::string late =
      schedule_text("[schedule]\ndecay = \"cosine\"\ndecay_start = 1000.0\n", 20);
  BOOST_TEST(contains(late, "schedule.decay_start must be before the run's end"), late);
  const std::string milestone =
      schedule_text("[schedule]\ndecay = \"multistep\"\nmilestones = [5.0, 500.0]\n", 20);
  BOOST_TEST(contains(milestone, "milestone at step 500 falls after the run's 20 steps"),
             milestone);
  BOOST_TEST(schedule_text("[schedule]\ndecay = \"multistep\"\nmilestones = [5.0]\n", 20) == "");
}

// 0 LR trials beside multipliers was told to match the multipliers' count, as if only 0 were off.
BOOST_AUTO_TEST_CASE(zero_lr_trials_are_refused_as_zero) {
  lbt::Config sweep = load(
      "[train]\ntarget = \"val_loss<=0.5\"\n[sweep]\nbatch_sizes = [64]\nlr_trials = 0\n"
      "lr_multipliers = [0.5, 1.0]\n");
  try {
    lbt::experiments::read_sweep_settings(sweep, {}, 0, "");
    BOOST_FAIL("lr_trials = 0 was taken");
  } catch (const lbt::ConfigError& e) {
    BOOST_TEST(contains(e.what(), "sweep.lr_trials must be >= 1, got 0"), e.what());
  }
}

// A key with an empty part and a --set value that holds a second key were taken and never used:
// --set .optimizer.lr=7 ran at 0.1 (2026-11-30 audit).
BOOST_AUTO_TEST_CASE(a_key_with_an_empty_part_or_a_set_of_two_keys_is_refused) {
  BOOST_TEST(contains(error_of("", {".optimizer.lr=7"}), "unknown config key '.optimizer.lr'"));
  BOOST_TEST(contains(error_of("\"\".optimizer.lr = 7\n"), "unknown config key '.optimizer.lr'"));
  try {
    load("", {"train.steps=5\noptimizer.lr=3"});
    BOOST_FAIL("taken");
  } catch (const lbt::ConfigError& e) {
    BOOST_TEST(contains(e.what(), "the value holds more than one TOML value"), e.what());
  }
}
