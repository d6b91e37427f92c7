// schedules/from_config: make_schedule from TOML strings; scaling, units, composition,
// validation errors and warnings.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numbers>
#include <sstream>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "schedules/schedule_options.hpp"
#include "support/tolerance.hpp"
#include "trainer/config/run_config.hpp"

using lbt::Config;
using lbt::ConfigError;
using lbt::schedules::make_schedule;
using lbt::schedules::ScheduleContext;

namespace {
bool near(double got, double want) {
  return lbt::test::close(got, want, 1e-15, 1e-12);
}

struct Built {
  lbt::schedules::Schedule lr;
  std::string warnings;
};
// The schedule options of TOML text, validated as every command validates a config.
lbt::schedules::ScheduleOptions options_of(const std::string& toml) {
  Config config = Config::from_string(toml, "test.toml");
  config.validate(lbt::trainer::run_schema());
  return lbt::trainer::read_run_schedule(config);
}
Built build(const std::string& toml, ScheduleContext context) {
  std::ostringstream warnings;
  context.warnings = &warnings;
  Built b{make_schedule(options_of(toml), context), ""};
  b.warnings = warnings.str();
  return b;
}
ConfigError error_of(const std::string& toml, ScheduleContext context) {
  context.warnings = nullptr;
  try {
    make_schedule(options_of(toml), context);
  } catch (const ConfigError& e) {
    return e;
  }
  BOOST_FAIL("expected a ConfigError for:\n" << toml);
  return ConfigError("unreachable");
}
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

BOOST_AUTO_TEST_CASE(no_schedule_section_is_constant_base_lr_without_scaling) {
  Config config = Config::from_string("[train]\nglobal_batch = 256\n", "empty.toml");
  auto lr = make_schedule(lbt::trainer::read_run_schedule(config), {0.05, 512, 100, 1000});
  for (std::int64_t step : {0, 1, 999, 1000, 100000}) BOOST_TEST(lr(step) == 0.05);
  // The reference batch is the config's own global batch, not the run's (here 512).
  BOOST_TEST(contains(config.resolved_toml(), "reference_batch = 256"));
}

BOOST_AUTO_TEST_CASE(linear_and_sqrt_scaling_set_the_peak) {
  const std::string base = "[schedule]\nreference_batch = 256\nscaling = ";
  for (std::int64_t B : {256, 1024, 4096}) {
    const double k = double(B) / 256.0;
    BOOST_TEST_CONTEXT("B = " << B) {
      BOOST_TEST(near(build(base + "\"linear\"\n", {0.1, B, 10, 100}).lr(0), 0.1 * k));
      BOOST_TEST(near(build(base + "\"sqrt\"\n", {0.1, B, 10, 100}).lr(0), 0.1 * std::sqrt(k)));
      BOOST_TEST(near(build(base + "\"none\"\n", {0.1, B, 10, 100}).lr(0), 0.1));
    }
  }
}

BOOST_AUTO_TEST_CASE(warmup_in_epochs_then_cosine_to_the_end_of_the_run) {
  // 5 epochs x 100 steps = 500 warmup steps; the cosine covers steps 500..999.
  const auto b = build(R"(
[schedule]
scaling = "linear"
reference_batch = 128
warmup = 5
warmup_unit = "epochs"
decay = "cosine"
)",
                       {0.1, 512, 100, 1000});
  const double peak = 0.4;
  BOOST_TEST(b.lr(0) == 0.0);
  BOOST_TEST(near(b.lr(499), peak * 499.0 / 500.0));
  BOOST_TEST(near(b.lr(500), peak));
  BOOST_TEST(near(b.lr(750), peak * 0.5 * (1.0 + std::cos(std::numbers::pi * 250.0 / 500.0))));
  BOOST_TEST(near(b.lr(999), peak * 0.5 * (1.0 + std::cos(std::numbers::pi * 499.0 / 500.0))));
  BOOST_TEST(b.lr(1000) == 0.0);
  BOOST_TEST(b.lr(5000) == 0.0);
  BOOST_TEST(b.warnings.empty());
}

BOOST_AUTO_TEST_CASE(warmup_in_samples_covers_the_same_samples_at_two_batches) {
  const std::string toml = "[schedule]\nwarmup = 25600\nwarmup_unit = \"samples\"\n";
  for (std::int64_t B : {128, 256, 1024}) {
    const std::int64_t W = 25600 / B;  // 200, 100, 25 steps
    auto lr = build(toml, {1.0, B, 10, 1000}).lr;
    BOOST_TEST_CONTEXT("B = " << B) {
      BOOST_TEST(W * B == 25600);
      BOOST_TEST(near(lr(W - 1), double(W - 1) / double(W)));
      BOOST_TEST(lr(W) == 1.0);
    }
  }
  // A length that does not divide rounds up: 1000 samples at B = 300 -> 4 steps (1200 samples).
  auto lr = build("[schedule]\nwarmup = 1000\nwarmup_unit = \"samples\"\n", {1.0, 300, 10, 100}).lr;
  BOOST_TEST(near(lr(3), 0.75));
  BOOST_TEST(lr(4) == 1.0);
}

BOOST_AUTO_TEST_CASE(goyal_multistep_with_decay_clock_from_step_zero) {
  // Goyal et al.: 5 warmup epochs from base lr, x0.1 at epochs 30, 60, 80 (absolute).
  const auto b = build(R"(
[schedule]
scaling = "linear"
reference_batch = 256
warmup = 5
warmup_unit = "epochs"
warmup_start = 0.125
decay = "multistep"
decay_unit = "epochs"
decay_start = 0
milestones = [30, 60, 80]
gamma = 0.1
)",
                       {0.1, 2048, 10, 900});
  BOOST_TEST(b.warnings.empty());  // every milestone lies past the warmup
  const auto& lr = b.lr;
  const double peak = 0.8;  // 0.1 * 2048 / 256; warmup_start 1/k = base lr
  BOOST_TEST(near(lr(0), 0.1));
  BOOST_TEST(near(lr(49), 0.1 + (peak - 0.1) * 49.0 / 50.0));
  BOOST_TEST(near(lr(50), peak));
  BOOST_TEST(near(lr(299), peak));
  BOOST_TEST(near(lr(300), peak * 0.1));
  BOOST_TEST(near(lr(599), peak * 0.1));
  BOOST_TEST(near(lr(600), peak * 0.01));
  BOOST_TEST(near(lr(800), peak * 0.001));
  BOOST_TEST(near(lr(5000), peak * 0.001));
}

// A milestone inside the warmup takes effect at the warmup's end: said (it was silent), and
// Goyal's milestones past the warmup stay quiet.
BOOST_AUTO_TEST_CASE(a_milestone_inside_the_warmup_is_moved_to_its_end_with_a_warning) {
  const auto b = build(R"(
[schedule]
warmup = 390
decay = "multistep"
decay_start = 0
milestones = [200]
gamma = 0.1
)",
                       {0.05, 128, 0, 1000});
  BOOST_TEST(b.lr(389) > 0.04);  // still warming up: the milestone has not fallen
  BOOST_TEST(near(b.lr(390), 0.005));
  BOOST_TEST(contains(b.warnings,
                      "the decay's milestone at step 200 falls inside the warmup (390 "
                      "steps): it takes effect at step 390"),
             b.warnings);
}

BOOST_AUTO_TEST_CASE(an_absolute_warmup_start_is_the_same_lr_at_every_batch) {
  const std::string toml = R"(
[schedule]
scaling = "linear"
reference_batch = 256
warmup = 10
warmup_start_lr = 0.1
)";
  for (std::int64_t B : {512, 4096}) {
    const double peak = 0.1 * double(B) / 256.0;
    const auto lr = build(toml, {0.1, B, 10, 100}).lr;
    BOOST_TEST_CONTEXT("B = " << B) {
      BOOST_TEST(near(lr(0), 0.1));
      BOOST_TEST(near(lr(5), 0.1 + (peak - 0.1) * 0.5));
      BOOST_TEST(near(lr(10), peak));
    }
  }
  const auto e = error_of(toml + "warmup_start = 0.5\n", {0.1, 512, 10, 100});
  BOOST_TEST(contains(e.what(), "schedule.warmup_start_lr"));
}

BOOST_AUTO_TEST_CASE(decay_start_after_the_warmup_holds_the_peak_in_between) {
  const auto lr = build(R"(
[schedule]
warmup = 10
decay = "linear"
decay_start = 50
decay_length = 50
final_frac = 0.1
)",
                        {2.0, 64, 10, 100})
                      .lr;
  BOOST_TEST(near(lr(9), 2.0 * 0.9));
  BOOST_TEST(lr(10) == 2.0);
  BOOST_TEST(lr(49) == 2.0);
  BOOST_TEST(lr(50) == 2.0);
  BOOST_TEST(near(lr(75), 2.0 * (1.0 - 0.9 * 0.5)));
  BOOST_TEST(near(lr(100), 0.2));
  BOOST_TEST(near(lr(1000), 0.2));
}

BOOST_AUTO_TEST_CASE(wsd_from_config_cools_down_over_the_last_fraction) {
  // total 1000, warmup 100 -> decay phase 900 steps: stable 720, cooldown 180.
  const auto lr = build(R"(
[schedule]
warmup = 100
decay = "wsd"
cooldown_frac = 0.2
)",
                        {1.0, 64, 10, 1000})
                      .lr;
  BOOST_TEST(lr(100) == 1.0);
  BOOST_TEST(lr(819) == 1.0);
  BOOST_TEST(lr(820) == 1.0);
  BOOST_TEST(near(lr(910), 0.5));
  BOOST_TEST(near(lr(999), 1.0 / 180.0));
  BOOST_TEST(lr(1000) == 0.0);
}

BOOST_AUTO_TEST_CASE(every_decay_kind_builds_from_config_with_peak_at_the_boundary) {
  const char* kinds[] = {"constant",   "step",   "multistep", "exponential",  "inverse_time",
                         "polynomial", "cosine", "linear",    "inverse_sqrt", "wsd"};
  for (const char* kind : kinds) {
    BOOST_TEST_CONTEXT("decay = " << kind) {
      std::string toml = std::string("[schedule]\nwarmup = 10\ndecay = \"") + kind + "\"\n";
      if (std::string(kind) == "step") toml += "decay_every = 20\n";
      if (std::string(kind) == "multistep") toml += "milestones = [20, 40]\n";
      const auto b = build(toml, {0.5, 64, 10, 100});
      BOOST_TEST(b.lr(0) == 0.0);
      BOOST_TEST(near(b.lr(9), 0.45));
      BOOST_TEST(near(b.lr(10), 0.5));
      BOOST_TEST(b.lr(99) <= 0.5);
      BOOST_TEST(b.warnings.empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(legw_grows_the_warmup_with_the_batch) {
  // 1 epoch at B0 = 256; at B = 1024 (k = 4) LEGW warms up for 4 epochs = 200 steps at 50/epoch.
  const std::string toml = R"(
[schedule]
scaling = "sqrt"
reference_batch = 256
warmup = 1
warmup_unit = "epochs"
warmup_legw = true
)";
  const auto lr = build(toml, {0.1, 1024, 50, 1000}).lr;
  BOOST_TEST(near(lr(199), 0.2 * 199.0 / 200.0));
  BOOST_TEST(near(lr(200), 0.2));
  const auto e = error_of(R"(
[schedule]
warmup = 100
warmup_legw = true
)",
                          {0.1, 1024, 50, 1000});
  BOOST_TEST(contains(e.what(), "schedule.warmup_unit"));
}

BOOST_AUTO_TEST_CASE(unknown_kind_lists_the_valid_ones_and_the_nearest) {
  const auto e = error_of("[schedule]\ndecay = \"cosin\"\n", {0.1, 64, 10, 100});
  BOOST_TEST(contains(e.what(), "schedule.decay must be one of: constant, step, multistep"));
  BOOST_TEST(contains(e.what(), "'cosin'"));
  BOOST_TEST(contains(e.hint(), "did you mean 'cosine'"));
  const auto w = error_of("[schedule]\nwarmup_kind = \"gradual\"\n", {0.1, 64, 10, 100});
  BOOST_TEST(contains(w.what(), "linear, constant, exponential, quadratic"));
  const auto u = error_of("[schedule]\nwarmup_unit = \"epoch\"\n", {0.1, 64, 10, 100});
  BOOST_TEST(contains(u.hint(), "did you mean 'epochs'"));
}

BOOST_AUTO_TEST_CASE(non_increasing_milestones_are_rejected_naming_the_key) {
  const auto e =
      error_of("[schedule]\ndecay = \"multistep\"\nmilestones = [30, 20]\n", {0.1, 64, 10, 100});
  BOOST_TEST(contains(e.what(), "schedule.milestones must be > 0 and strictly increasing"));
  // Distinct in epochs, equal once converted: 0.1 and 0.2 epochs at 5 steps/epoch are both 1 step.
  const auto c = error_of(
      "[schedule]\ndecay = \"multistep\"\ndecay_unit = \"epochs\"\nmilestones = [0.1, 0.2]\n",
      {0.1, 64, 5, 100});
  BOOST_TEST(contains(c.what(), "schedule.milestones"));
}

BOOST_AUTO_TEST_CASE(bad_values_are_config_errors_naming_the_key) {
  const ScheduleContext ctx{0.1, 64, 10, 100};
  BOOST_TEST(
      contains(error_of("[schedule]\ngamma = 0\ndecay = \"step\"\ndecay_every = 5\n", ctx).what(),
               "schedule.gamma must be in (0, 1]"));
  BOOST_TEST(
      contains(error_of("[schedule]\nwarmup = -3\n", ctx).what(), "schedule.warmup must be"));
  BOOST_TEST(
      contains(error_of("[schedule]\ndecay = \"step\"\n", ctx).what(), "schedule.decay_every"));
  BOOST_TEST(
      contains(error_of("[schedule]\nwarmup = 5\nwarmup_kind = \"exponential\"\n", ctx).what(),
               "schedule.warmup_start"));
  // From the base LR it starts at optimizer.lr (it was refused): 0.1 x 4^(s/2), B = 4 x 64.
  const auto geometric = build(
                             "[schedule]\nscaling = \"linear\"\nreference_batch = 64\nwarmup = 2\n"
                             "warmup_kind = \"exponential\"\nwarmup_from_base_lr = true\n",
                             {0.1, 256, 10, 100})
                             .lr;
  BOOST_TEST((near(geometric(0), 0.1) && near(geometric(1), 0.2) && near(geometric(2), 0.4)));
  BOOST_TEST(
      contains(error_of("[schedule]\nscaling = \"linear\"\nreference_batch = 0\n", ctx).what(),
               "schedule.reference_batch"));
  // A cosine starting at the run's end has no length left: names the start (2026-11-30 audit:
  // it named decay_length and the warmup) and says which keys to set.
  const auto e = error_of("[schedule]\nwarmup = 60\ndecay = \"cosine\"\ndecay_start = 100\n", ctx);
  BOOST_TEST(contains(e.what(), "schedule.decay_start must be before the run's end"));
  BOOST_TEST(contains(e.hint(), "schedule.decay_length"));
}

// lr(W) is the peak and the last step of a 100-step run is 99: a 100-step warmup never gets
// there (it trained at 0.099 of 0.1 at most, silently), a 99-step one does.
BOOST_AUTO_TEST_CASE(a_warmup_as_long_as_the_run_is_refused_one_step_shorter_reaches_the_peak) {
  const ScheduleContext ctx{0.1, 64, 10, 100};
  const auto e = error_of("[schedule]\nwarmup = 100\n", ctx);
  BOOST_TEST(contains(e.what(), "schedule.warmup must be fewer steps than the run's 100 steps"),
             e.what());
  BOOST_TEST(build("[schedule]\nwarmup = 99\n", ctx).lr(99) == 0.1);
  // Where it is a note (lbt schedule), a decay to the end after it is no error: the LR climbs
  // 0.1 x s / 120 (it failed on schedule.decay_length, never set).
  ScheduleContext note = ctx;
  note.warmup_past_run = lbt::schedules::WarmupPastRun::kNote;
  const auto past = build("[schedule]\nwarmup = 120\ndecay = \"cosine\"\n", note).lr;
  BOOST_TEST((near(past(60), 0.05) && near(past(99), 0.1 * 99 / 120)));
}

// A warmup climbs to the peak and a decay falls from it; values that turn either around are
// refused, or warned of where another batch may be fine (an absolute LR against this peak).
BOOST_AUTO_TEST_CASE(values_that_run_a_warmup_or_a_decay_backwards_are_refused_or_warned) {
  const ScheduleContext ctx{0.1, 64, 10, 100};
  const auto says = [&](const std::string& toml, const std::string& what) {
    const auto e = error_of("[schedule]\n" + toml, ctx);
    BOOST_TEST(contains(e.what(), what), e.what());
  };
  says("decay = \"cosine\"\nfinal_frac = 2\n", "schedule.final_frac must be in [0, 1]");
  says("decay = \"step\"\ndecay_every = 5\ngamma = 2\n", "schedule.gamma must be in (0, 1]");
  says("warmup = 5\nwarmup_start = 5\n", "schedule.warmup_start must be in [0, 1]");
  says("warmup = 5\nwarmup_kind = \"constant\"\n",
       "schedule.warmup_start must be > 0 for warmup_kind = \"constant\"");
  // Goyal et al.'s constant warmup: the unscaled LR, then the peak.
  const auto goyal = build(
      "[schedule]\nscaling = \"linear\"\nreference_batch = 16\nwarmup = 5\n"
      "warmup_kind = \"constant\"\nwarmup_from_base_lr = true\n",
      ctx);
  BOOST_TEST(near(goyal.lr(4), 0.1));
  BOOST_TEST(near(goyal.lr(5), 0.4));
  const auto floor = build("[schedule]\nmin_lr = 1.0\n", ctx);
  BOOST_TEST(contains(floor.warnings, "warning: schedule.min_lr 1 is above the peak LR 0.1"),
             floor.warnings);
  const auto falls = build("[schedule]\nwarmup = 5\nwarmup_start_lr = 0.5\n", ctx);
  BOOST_TEST(contains(falls.warnings, "schedule.warmup_start_lr 0.5 is above the peak LR 0.1"),
             falls.warnings);
  BOOST_TEST(build("[schedule]\nwarmup = 5\nwarmup_start_lr = 0.05\n", ctx).warnings == "");
}

BOOST_AUTO_TEST_CASE(epochs_need_steps_per_epoch_from_the_run_or_the_config_key) {
  const std::string toml = "[schedule]\nwarmup = 2\nwarmup_unit = \"epochs\"\n";
  const auto e = error_of(toml, {0.1, 64, 0, 100});
  BOOST_TEST(contains(e.hint(), "--steps-per-epoch"));
  const auto lr = build(toml + "steps_per_epoch = 7\n", {1.0, 64, 0, 100}).lr;
  BOOST_TEST(near(lr(13), 13.0 / 14.0));
  BOOST_TEST(lr(14) == 1.0);
  // The run's own steps per epoch wins over the key, with a warning.
  const auto b = build(toml + "steps_per_epoch = 7\n", {1.0, 64, 10, 100});
  BOOST_TEST(b.lr(20) == 1.0);
  BOOST_TEST(near(b.lr(19), 0.95));
  BOOST_TEST(contains(b.warnings, "schedule.steps_per_epoch = 7 ignored"));
}

BOOST_AUTO_TEST_CASE(decay_longer_than_the_run_is_allowed_with_a_warning) {
  const auto b = build("[schedule]\ndecay = \"linear\"\ndecay_length = 200\n", {1.0, 64, 10, 100});
  BOOST_TEST(near(b.lr(100), 0.5));
  BOOST_TEST(
      contains(b.warnings, "warning: the decay ends at step 200, after the run's 100 steps"));
}

BOOST_AUTO_TEST_CASE(keys_the_chosen_decay_ignores_are_an_error) {
  const auto e = error_of("[schedule]\ndecay = \"cosine\"\ngamma = 0.5\n", {1.0, 64, 10, 100});
  BOOST_TEST(contains(e.what(), "schedule.gamma is not used with schedule.decay = \"cosine\""));
  BOOST_TEST(contains(e.what(), "step | multistep | exponential"));
}

BOOST_AUTO_TEST_CASE(min_lr_clamps_from_below) {
  const auto lr = build("[schedule]\ndecay = \"linear\"\nmin_lr = 0.25\n", {1.0, 64, 10, 100}).lr;
  BOOST_TEST(near(lr(50), 0.5));
  BOOST_TEST(lr(90) == 0.25);
  BOOST_TEST(lr(1000) == 0.25);
}

BOOST_AUTO_TEST_CASE(a_misspelt_schedule_key_is_unknown) {
  const auto e = error_of("[schedule]\nwarmpu = 5\n", {0.1, 64, 10, 100});
  BOOST_TEST(contains(e.hint(), "schedule.warmup"));
}
