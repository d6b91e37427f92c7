// The boundaries make_schedule reports for `lbt schedule --plot`: the warmup's end, a step or
// multistep decay's drops where they fall, a smooth decay's start and end.
#include <boost/test/unit_test.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "schedules/schedule_options.hpp"
#include "trainer/config/run_config.hpp"

namespace {

using Marks = std::vector<std::pair<std::string, std::int64_t>>;

// The marks of the schedule TOML `toml` gives at base LR 0.1, batch 2048, 10 steps an epoch,
// 200 steps.
Marks marks_of(const std::string& toml) {
  lbt::Config config = lbt::Config::from_string(toml, "marks.toml");
  config.validate(lbt::trainer::run_schema());
  Marks marks;
  lbt::schedules::ScheduleContext context{0.1, 2048, 10, 200};
  context.warnings = nullptr;
  context.boundaries = &marks;
  lbt::schedules::make_schedule(lbt::trainer::read_run_schedule(config), context);
  return marks;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(schedule_marks)

// Goyal et al.'s decay keeps its clock from step 0: it was marked "decay start" at step 0,
// before the warmup's end at 50, and its drops at epochs 8 and 12 not at all (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(a_multistep_decay_marks_its_drops_not_a_start_inside_the_warmup) {
  const Marks marks = marks_of(
      "[schedule]\nwarmup = 5\nwarmup_unit = \"epochs\"\ndecay = \"multistep\"\n"
      "decay_unit = \"epochs\"\ndecay_start = 0\nmilestones = [8, 12]\ngamma = 0.1\n");
  BOOST_TEST((marks == Marks{{"warmup end", 50}, {"drop", 80}, {"drop", 120}}));
}

BOOST_AUTO_TEST_CASE(a_step_decay_marks_each_drop_in_the_run) {
  const Marks marks = marks_of("[schedule]\ndecay = \"step\"\ndecay_every = 60\ngamma = 0.5\n");
  BOOST_TEST((marks == Marks{{"drop", 60}, {"drop", 120}, {"drop", 180}}));
}

BOOST_AUTO_TEST_CASE(a_smooth_decay_after_a_hold_marks_its_start_and_end) {
  const Marks marks = marks_of(
      "[schedule]\nwarmup = 20\ndecay = \"cosine\"\ndecay_start = 50\ndecay_length = 100\n");
  BOOST_TEST((marks == Marks{{"warmup end", 20}, {"decay start", 50}, {"decay end", 150}}));
}

BOOST_AUTO_TEST_SUITE_END()
