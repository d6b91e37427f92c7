// The scaling study's aggregation over repeats (experiments/scaling/scaling.hpp): per-repeat
// speedup/efficiency against the smallest worker count of the same repeat, medians with
// min-max, the rotated run order, and a run directory read back (throughput, divergence),
// against values computed by hand.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "experiments/scaling/scaling.hpp"

using namespace lbt::experiments;

namespace {

constexpr double kExamplesPerEpoch = 60000.0;

ScalingRow run(int repeat, int workers, double samples_per_s) {
  ScalingRow r;
  r.repeat = repeat;
  r.workers = workers;
  r.global_batch = 128 * workers;
  r.steps = 400;
  r.samples_per_s = samples_per_s;
  r.epoch_time_s = kExamplesPerEpoch / samples_per_s;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scaling_summary)

BOOST_AUTO_TEST_CASE(three_repeats_give_median_of_per_repeat_ratios_with_min_and_max) {
  // Repeat speeds differ 2x, as on the shared VM; listed out of order on purpose.
  // Per repeat (K=2 vs K=1): 1800/1000 = 1.8, 800/500 = 1.6, 1600/800 = 2.0.
  const std::vector<ScalingRow> runs = {run(2, 2, 800.0),  run(1, 1, 1000.0), run(3, 2, 1600.0),
                                        run(1, 2, 1800.0), run(3, 1, 800.0),  run(2, 1, 500.0)};
  const auto rows = summarise_scaling(runs);
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);

  const ScalingSummary& one = rows[0];
  BOOST_TEST(one.workers == 1);
  BOOST_TEST(one.repeats == 3);
  BOOST_TEST(one.global_batch == 128);
  BOOST_TEST(one.steps == 400);
  BOOST_TEST(one.samples_per_s == 800.0);  // median of 1000, 500, 800
  BOOST_TEST(one.samples_per_s_min == 500.0);
  BOOST_TEST(one.samples_per_s_max == 1000.0);
  BOOST_TEST(one.epoch_time_s == 75.0, boost::test_tools::tolerance(1e-12));  // 60000 / 800
  BOOST_TEST(one.speedup == 1.0);
  BOOST_TEST(one.efficiency_min == 1.0);
  BOOST_TEST(one.efficiency_max == 1.0);

  const ScalingSummary& two = rows[1];
  BOOST_TEST(two.workers == 2);
  BOOST_TEST(two.global_batch == 256);
  BOOST_TEST(two.samples_per_s == 1600.0);  // median of 800, 1600, 1800
  BOOST_TEST(two.samples_per_s_min == 800.0);
  BOOST_TEST(two.samples_per_s_max == 1800.0);
  BOOST_TEST(two.epoch_time_s == 37.5, boost::test_tools::tolerance(1e-12));  // 60000 / 1600
  // Median of the per-repeat ratios 1.8, 1.6, 2.0, not the ratio of medians 1600/800 = 2.
  BOOST_TEST(two.speedup == 1.8, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(two.speedup_min == 1.6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(two.speedup_max == 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(two.efficiency == 0.9, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(two.efficiency_min == 0.8, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(two.efficiency_max == 1.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(even_repeats_take_the_mean_of_the_middle_two_against_the_smallest_count) {
  // Reference is K=2 (the smallest run): speedup = 2 x samples/s / samples/s at K=2.
  // Repeat 1: 2 x 1500/1000 = 3.0 (efficiency 0.75); repeat 2: 2 x 1080/600 = 3.6 (0.9).
  const std::vector<ScalingRow> runs = {run(1, 2, 1000.0), run(1, 4, 1500.0), run(2, 4, 1080.0),
                                        run(2, 2, 600.0)};
  const auto rows = summarise_scaling(runs);
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);
  BOOST_TEST(rows[0].workers == 2);
  BOOST_TEST(rows[0].samples_per_s == 800.0);
  BOOST_TEST(rows[0].speedup == 2.0);
  BOOST_TEST(rows[0].efficiency == 1.0);
  BOOST_TEST(rows[1].workers == 4);
  BOOST_TEST(rows[1].repeats == 2);
  BOOST_TEST(rows[1].samples_per_s == 1290.0);
  BOOST_TEST(rows[1].epoch_time_s == 60000.0 / 1290.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rows[1].speedup == 3.3, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rows[1].efficiency == 0.825, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rows[1].efficiency_min == 0.75, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rows[1].efficiency_max == 0.9, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(per_repeat_ratios_are_set_on_the_raw_runs) {
  std::vector<ScalingRow> runs = {run(1, 1, 1000.0), run(1, 2, 1800.0), run(2, 2, 800.0),
                                  run(2, 1, 500.0)};
  set_speedups_per_repeat(runs);
  BOOST_TEST(runs[0].speedup == 1.0);
  BOOST_TEST(runs[1].speedup == 1.8, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(runs[1].efficiency == 0.9, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(runs[2].speedup == 1.6, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(runs[3].efficiency == 1.0);
}

BOOST_AUTO_TEST_CASE(repeat_order_rotates_the_worker_list_by_one_per_repeat) {
  const std::vector<int> workers = {1, 2, 4};
  BOOST_TEST(repeat_order(workers, 1) == std::vector<int>({1, 2, 4}));
  BOOST_TEST(repeat_order(workers, 2) == std::vector<int>({2, 4, 1}));
  BOOST_TEST(repeat_order(workers, 3) == std::vector<int>({4, 1, 2}));
  BOOST_TEST(repeat_order(workers, 4) == std::vector<int>({1, 2, 4}));
}

BOOST_AUTO_TEST_CASE(no_runs_and_repeats_below_one_are_rejected) {
  BOOST_CHECK_THROW(summarise_scaling({}), lbt::Error);
  ScalingOptions o;
  o.workers = {1, 2};
  o.repeats = 0;
  BOOST_CHECK_EXCEPTION(run_scaling(o), lbt::ConfigError, [](const lbt::ConfigError& e) {
    return std::string(e.what()).find("--repeats must be >= 1, got 0") != std::string::npos &&
           e.hint().find("--repeats 3") != std::string::npos;
  });
}

// A run directory with summary.json (status, steps, global batch, steps per epoch) and
// metrics.jsonl lines at (step, wall_time).
std::filesystem::path run_dir(const std::string& name, const std::string& status,
                              const std::vector<std::pair<int, double>>& lines) {
  const auto dir = std::filesystem::temp_directory_path() / ("lbt_scaling_run_" + name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "summary.json")
      << R"({"world_size": 2, "global_batch": 128, "steps": 30, "steps_per_epoch": 100, )"
      << R"("status": ")" << status << R"(", "divergence_reason": "loss not finite"})";
  std::ofstream metrics(dir / "metrics.jsonl");
  for (const auto& [step, wall] : lines) {
    metrics << R"({"step": )" << step << R"(, "wall_time": )" << wall << "}\n";
  }
  return dir;
}

BOOST_AUTO_TEST_CASE(a_runs_throughput_is_read_between_its_first_and_last_logged_step) {
  // Steps 10 -> 30 in 1 s at 128 examples: 2560 samples/s; an epoch of 100 steps x 128
  // examples then takes 12800 / 2560 = 5 s. The window before step 10 (warm-up) is left out.
  const auto dir = run_dir("ok", "budget_exhausted", {{10, 1.0}, {20, 1.4}, {30, 2.0}});
  const ScalingRow row = read_scaling_run(dir);
  BOOST_TEST(row.workers == 2);
  BOOST_TEST(row.steps == 30);
  BOOST_TEST(row.samples_per_s == 2560.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(row.epoch_time_s == 5.0, boost::test_tools::tolerance(1e-12));
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_diverged_run_is_named_as_diverged_not_as_too_short) {
  const auto dir = run_dir("diverged", "diverged", {});
  BOOST_CHECK_EXCEPTION(read_scaling_run(dir), lbt::Error, [](const lbt::Error& e) {
    return std::string(e.what()).find("diverged at step 30 (loss not finite)") !=
               std::string::npos &&
           e.hint().find("--set optimizer.lr=") != std::string::npos;
  });
  std::filesystem::remove_all(dir);
}

// A window that took no time read 2.3e12 samples/s (max(seconds, 1e-9)); a torn or edited line
// was nlohmann's parse error naming no file. Both are errors naming metrics.jsonl.
BOOST_AUTO_TEST_CASE(a_window_of_no_time_and_a_damaged_log_are_errors_naming_the_file) {
  const auto still = run_dir("still", "budget_exhausted", {{10, 1.0}, {30, 1.0}});
  BOOST_CHECK_EXCEPTION(read_scaling_run(still), lbt::DataError, [](const lbt::Error& e) {
    return std::string(e.what()).find(
               "metrics.jsonl: its throughput window of 2560 examples "
               "took 0.000000 s") != std::string::npos;
  });
  std::ofstream(still / "metrics.jsonl", std::ios::app) << R"({"step": 4)";
  BOOST_CHECK_EXCEPTION(read_scaling_run(still), lbt::DataError, [](const lbt::Error& e) {
    return std::string(e.what()).find("metrics.jsonl: line 3 is not a step's line") !=
           std::string::npos;
  });
  std::ofstream(still / "summary.json", std::ios::trunc) << R"({"world_size": 2, "glob)";
  BOOST_CHECK_THROW(read_scaling_run(still), lbt::DataError);  // names summary.json
  std::filesystem::remove_all(still);
}

BOOST_AUTO_TEST_SUITE_END()
