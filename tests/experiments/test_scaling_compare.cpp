// `lbt scaling --compare` (experiments/scaling/scaling_compare.hpp): per-variant efficiency against
// the variant's own smallest worker count, per-repeat throughput ratios against the baseline
// variant with median [min-max], the interleaved run order, and --compare's parsing, against
// values computed by hand.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "experiments/scaling/scaling_compare.hpp"

using namespace lbt::experiments;
namespace tt = boost::test_tools;

namespace {

ScalingRow run(const std::string& variant, int repeat, int workers, double samples_per_s) {
  ScalingRow r;
  r.variant = variant;
  r.repeat = repeat;
  r.workers = workers;
  r.global_batch = 512;
  r.steps = 200;
  r.samples_per_s = samples_per_s;
  r.epoch_time_s = 50000.0 / samples_per_s;
  return r;
}

// Two variants, three repeats whose speeds differ up to 2x, listed out of order. By hand:
//   repeat   A@1   A@2   B@1   B@2   B/A@1          B/A@2               eff A@2  eff B@2
//   1       1000  1800  1000  1900   1.00   1900/1800 = 1.05556          0.90     0.95
//   2        500   800   550   880   1.10    880/800  = 1.10             0.80     0.80
//   3        800  1600   760  1444   0.95   1444/1600 = 0.9025           1.00     0.95
// (eff B@2 in repeat 3: 1444 / 760 / 2 = 0.95.) Efficiency differences B - A at 2 workers:
// +0.05, 0, -0.05.
std::vector<ScalingRow> two_variants() {
  return {run("B", 3, 2, 1444.0), run("A", 1, 1, 1000.0), run("B", 2, 1, 550.0),
          run("A", 2, 2, 800.0),  run("A", 3, 1, 800.0),  run("B", 1, 2, 1900.0),
          run("A", 1, 2, 1800.0), run("B", 1, 1, 1000.0), run("A", 2, 1, 500.0),
          run("B", 3, 1, 760.0),  run("A", 3, 2, 1600.0), run("B", 2, 2, 880.0)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scaling_compare)

BOOST_AUTO_TEST_CASE(ratios_against_the_baseline_are_taken_within_each_repeat) {
  const auto ratios = compare_variants(two_variants(), {"A", "B"});
  BOOST_REQUIRE_EQUAL(ratios.size(), 2u);  // B at 1 and at 2 workers; no row for the baseline

  const VariantRatio& one = ratios[0];
  BOOST_TEST(one.workers == 1);
  BOOST_TEST(one.variant == "B");
  BOOST_TEST(one.baseline == "A");
  BOOST_TEST(one.repeats == 3);
  BOOST_TEST(one.ratio.median == 1.0, tt::tolerance(1e-12));  // of 1.00, 1.10, 0.95
  BOOST_TEST(one.ratio.min == 0.95, tt::tolerance(1e-12));
  BOOST_TEST(one.ratio.max == 1.1, tt::tolerance(1e-12));
  BOOST_TEST(one.efficiency.median == 0.0);  // both 1 at their own reference
  BOOST_TEST(one.efficiency.max == 0.0);

  const VariantRatio& two = ratios[1];
  BOOST_TEST(two.workers == 2);
  // Median of the per-repeat ratios 19/18, 1.1, 0.9025, not the ratio of the medians
  // 1444 / 1600 = 0.9025.
  BOOST_TEST(two.ratio.median == 1900.0 / 1800.0, tt::tolerance(1e-12));
  BOOST_TEST(two.ratio.min == 0.9025, tt::tolerance(1e-12));
  BOOST_TEST(two.ratio.max == 1.1, tt::tolerance(1e-12));
  BOOST_TEST(two.efficiency.median == 0.0, tt::tolerance(1e-12));
  BOOST_TEST(two.efficiency.min == -0.05, tt::tolerance(1e-9));
  BOOST_TEST(two.efficiency.max == 0.05, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(each_variant_is_summarised_against_its_own_smallest_count) {
  const auto rows = summarise_scaling(two_variants());
  BOOST_REQUIRE_EQUAL(rows.size(), 4u);
  // Variants in order of first appearance (B's run is listed first), counts ascending.
  BOOST_TEST(rows[0].variant == "B");
  BOOST_TEST(rows[0].workers == 1);
  BOOST_TEST(rows[0].samples_per_s == 760.0);  // median of 1000, 550, 760
  BOOST_TEST(rows[0].efficiency == 1.0);
  BOOST_TEST(rows[1].variant == "B");
  BOOST_TEST(rows[1].workers == 2);
  BOOST_TEST(rows[1].repeats == 3);
  BOOST_TEST(rows[1].samples_per_s == 1444.0);                   // median of 1900, 880, 1444
  BOOST_TEST(rows[1].efficiency == 0.95, tt::tolerance(1e-12));  // of 0.95, 0.80, 0.95
  BOOST_TEST(rows[1].efficiency_min == 0.8, tt::tolerance(1e-12));
  BOOST_TEST(rows[1].efficiency_max == 0.95, tt::tolerance(1e-12));
  BOOST_TEST(rows[3].variant == "A");
  BOOST_TEST(rows[3].workers == 2);
  BOOST_TEST(rows[3].speedup == 1.8, tt::tolerance(1e-12));  // of 1.8, 1.6, 2.0
  BOOST_TEST(rows[3].efficiency == 0.9, tt::tolerance(1e-12));
  BOOST_TEST(rows[3].efficiency_min == 0.8, tt::tolerance(1e-12));
  BOOST_TEST(rows[3].efficiency_max == 1.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(three_variants_even_repeats_and_a_smallest_count_above_one) {
  // Reference K = 2. Ratios at 4 workers against "b=1": repeat 1 1500/1000 (b=4) and
  // 900/1000 (b=25); repeat 2 1300/1000 and 1100/1000. Medians of two: the mean.
  const std::vector<ScalingRow> runs = {
      run("b=1", 1, 2, 600.0),  run("b=4", 1, 2, 600.0),  run("b=25", 1, 2, 600.0),
      run("b=1", 1, 4, 1000.0), run("b=4", 1, 4, 1500.0), run("b=25", 1, 4, 900.0),
      run("b=1", 2, 2, 500.0),  run("b=4", 2, 2, 500.0),  run("b=25", 2, 2, 500.0),
      run("b=1", 2, 4, 1000.0), run("b=4", 2, 4, 1300.0), run("b=25", 2, 4, 1100.0)};
  const auto ratios = compare_variants(runs, {"b=1", "b=4", "b=25"});
  BOOST_REQUIRE_EQUAL(ratios.size(), 4u);
  BOOST_TEST(ratios[0].workers == 2);
  BOOST_TEST(ratios[0].ratio.median == 1.0);
  BOOST_TEST(ratios[2].workers == 4);
  BOOST_TEST(ratios[2].variant == "b=4");
  BOOST_TEST(ratios[2].ratio.median == 1.4, tt::tolerance(1e-12));
  BOOST_TEST(ratios[2].ratio.min == 1.3, tt::tolerance(1e-12));
  BOOST_TEST(ratios[3].variant == "b=25");
  BOOST_TEST(ratios[3].ratio.median == 1.0, tt::tolerance(1e-12));  // (0.9 + 1.1) / 2
  // Efficiency at 4 against 2: b=1 2x1000/600/4 = 0.8333 and 2x1000/500/4 = 1.0; b=25
  // 2x900/600/4 = 0.75 and 2x1100/500/4 = 1.1: differences -0.0833 and +0.1.
  BOOST_TEST(ratios[3].efficiency.min == 0.75 - 2000.0 / 2400.0, tt::tolerance(1e-12));
  BOOST_TEST(ratios[3].efficiency.max == 0.1, tt::tolerance(1e-12));
  BOOST_TEST(ratios[3].efficiency.median == 0.5 * (0.75 - 2000.0 / 2400.0 + 0.1),
             tt::tolerance(1e-12));

  const std::string csv = compare_csv(ratios);
  BOOST_TEST(csv.substr(0, csv.find('\n')) ==
             "workers,variant,baseline,repeats,samples_per_s_ratio,samples_per_s_ratio_min,"
             "samples_per_s_ratio_max,efficiency_diff,efficiency_diff_min,efficiency_diff_max");
  BOOST_TEST(csv.find("\n4,b=4,b=1,2,1.4000,1.3000,1.5000,") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_run_without_its_baseline_is_an_error) {
  const std::vector<ScalingRow> runs = {run("A", 1, 1, 1000.0), run("B", 1, 1, 900.0),
                                        run("B", 1, 2, 1700.0)};
  BOOST_CHECK_THROW(compare_variants(runs, {"A", "B"}), lbt::Error);
}

BOOST_AUTO_TEST_CASE(runs_of_a_repeat_are_worker_major_and_rotate_by_one) {
  auto order = [](int repeat) {
    std::vector<std::pair<int, int>> pairs;
    for (const StudyRun& r : repeat_runs(2, {1, 2}, repeat))
      pairs.push_back({r.variant, r.workers});
    return pairs;
  };
  using P = std::vector<std::pair<int, int>>;
  BOOST_TEST((order(1) == P{{0, 1}, {1, 1}, {0, 2}, {1, 2}}));
  BOOST_TEST((order(2) == P{{1, 1}, {0, 2}, {1, 2}, {0, 1}}));
  BOOST_TEST((order(3) == P{{0, 2}, {1, 2}, {0, 1}, {1, 1}}));
  BOOST_TEST((order(5) == order(1)));
  // One variant: the worker order of repeat_order.
  std::vector<int> workers;
  for (const StudyRun& r : repeat_runs(1, {1, 2, 4}, 2)) workers.push_back(r.workers);
  BOOST_TEST(workers == repeat_order({1, 2, 4}, 2));
}

BOOST_AUTO_TEST_CASE(compare_specs_parse_into_variants) {
  const auto v = parse_compare("train.overlap_comm=false,true");
  BOOST_REQUIRE_EQUAL(v.size(), 2u);
  BOOST_TEST(v[0].tag == "overlap_comm=false");
  BOOST_TEST(v[0].set == "train.overlap_comm=false");
  BOOST_TEST(v[1].set == "train.overlap_comm=true");
  const auto spaced = parse_compare(" train.bucket_mb = 1, 4 ,25");
  BOOST_REQUIRE_EQUAL(spaced.size(), 3u);
  BOOST_TEST(spaced[2].set == "train.bucket_mb=25");
  // Commas inside an array or a string belong to the value; the tag has no quotes or commas.
  const auto arrays = parse_compare("schedule.milestones=[8.0,12.0],[6.0]");
  BOOST_REQUIRE_EQUAL(arrays.size(), 2u);
  BOOST_TEST(arrays[0].set == "schedule.milestones=[8.0,12.0]");
  BOOST_TEST(arrays[0].tag == "milestones=_8.0_12.0_");
  BOOST_TEST(parse_compare("model.spec=\"mlp:8,4\",mlp:8-4")[0].tag == "spec=mlp_8_4");
}

BOOST_AUTO_TEST_CASE(bad_compare_specs_are_config_errors) {
  auto fails_with = [](const std::string& spec, const std::string& words) {
    try {
      parse_compare(spec);
    } catch (const lbt::ConfigError& e) {
      if (std::string(e.what()).find(words) != std::string::npos) return true;
      BOOST_TEST_MESSAGE("'" << spec << "': " << e.what());
      return false;
    }
    return false;
  };
  BOOST_TEST(fails_with("train.overlap_comm", "has no '='"));
  BOOST_TEST(fails_with("=false,true", "is not KEY=V1,V2"));
  BOOST_TEST(fails_with("train.overlap_comm=true", "has one value"));
  BOOST_TEST(fails_with("train.bucket_mb=1,4,1", "lists 1 twice"));
  BOOST_TEST(fails_with("train.bucket_mb=1,,4", "empty value"));
  BOOST_TEST(fails_with("train.bucket_mb=", "empty value"));
  BOOST_TEST(fails_with("train.steps=10,20", "the study sets train.steps itself"));
  BOOST_TEST(!fails_with("train.steps=10,20", "train.steps=2"));  // no placeholder value shown
  // The LR does not change a step's cost; the study keeps the config's at every batch.
  BOOST_TEST(fails_with("schedule.scaling=linear,sqrt", "the study sets schedule.scaling itself"));
  BOOST_TEST(fails_with("model.spec=\"a/b\",a_b", "same directory name"));
}

BOOST_AUTO_TEST_CASE(run_scaling_refuses_a_bad_compare_before_any_run) {
  ScalingOptions o;
  o.workers = {1, 2};
  o.compare = "train.overlap_comm=true";
  o.out = std::filesystem::temp_directory_path() / "lbt_scaling_compare_never_created";
  std::filesystem::remove_all(o.out);
  BOOST_CHECK_THROW(run_scaling(o), lbt::ConfigError);
  BOOST_TEST(!std::filesystem::exists(o.out));
}

BOOST_AUTO_TEST_CASE(a_note_only_for_keys_that_change_what_ranks_exchange_from_one_worker) {
  BOOST_TEST(single_rank_note("train.overlap_comm", 1).find("nothing to exchange") !=
             std::string::npos);
  BOOST_TEST(single_rank_note("train.sync_every", 1).find("train.sync_every") != std::string::npos);
  BOOST_TEST(single_rank_note("train.overlap_comm", 2).empty());
  BOOST_TEST(single_rank_note("optimizer.lr", 1).empty());
}

BOOST_AUTO_TEST_SUITE_END()
