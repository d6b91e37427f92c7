// Reading trial run directories and the sweep CSVs: steps-to-result from hand-made
// summary.json / eval.jsonl files, best-per-batch selection, and the CSV round trip.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/io.hpp"
#include "experiments/child_process.hpp"
#include "experiments/sweep/exec_trial.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "support/process_scratch.hpp"

using namespace lbt::experiments;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  static const lbt::test::ProcessScratch dir(lbt::test::per_process("lbt_sweep_results"));
  fs::path p = dir.path() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Trial trial(const std::string& name, std::int64_t B, double lr) {
  Trial t;
  t.name = name;
  t.batch_size = B;
  t.lr = lr;
  return t;
}

// A hand-made run: val_accuracy crosses 0.85 first at step 300 (0.84 at 200, 0.86 at 300).
void write_run(const fs::path& dir, const std::string& summary) {
  std::ofstream(dir / "summary.json") << summary;
  std::ofstream(dir / "eval.jsonl")
      << R"({"step":100,"val_loss":0.60,"val_accuracy":0.80,"target_met":false})"
         "\n"
      << R"({"step":200,"val_loss":0.45,"val_accuracy":0.84,"target_met":false})"
         "\n"
      << R"({"step":300,"val_loss":0.41,"val_accuracy":0.86,"target_met":true})"
         "\n"
      << R"({"step":400,"val_loss":0.40,"val_accuracy":0.87,"target_met":true})"
         "\n"
      << R"({"step":5)";  // torn last line, as after a kill
}

}  // namespace

BOOST_AUTO_TEST_CASE(steps_to_result_from_summary_agrees_with_the_hand_made_eval_log) {
  const fs::path dir = scratch("reached");
  write_run(dir, R"({"status":"reached_target","steps":300,"steps_to_target":300,
                     "examples_to_target":19200,"wall_time_s":1.5,"best_val_accuracy":0.86,
                     "best_val_loss":0.41,"target":"val_accuracy>=0.85"})");
  const TrialResult r = read_trial_result(trial("64_0", 64, 0.1), dir);
  BOOST_TEST(r.status == "reached_target");
  BOOST_TEST(r.steps_to_target == 300);
  BOOST_TEST(r.examples_to_target == 300 * 64);
  BOOST_TEST(first_step_meeting_target(dir / "eval.jsonl",
                                       lbt::trainer::parse_target("val_accuracy>=0.85")) == 300);
  BOOST_TEST(first_step_meeting_target(dir / "eval.jsonl",
                                       lbt::trainer::parse_target("val_loss<=0.45")) == 200);
  BOOST_TEST(first_step_meeting_target(dir / "eval.jsonl",
                                       lbt::trainer::parse_target("val_accuracy>=0.9")) == -1);
}

BOOST_AUTO_TEST_CASE(a_summary_without_steps_to_target_falls_back_to_the_eval_log) {
  const fs::path dir = scratch("fallback");
  write_run(dir, R"({"status":"reached_target","steps":400,"target":"val_accuracy>=0.85"})");
  const TrialResult r = read_trial_result(trial("32_1", 32, 0.1), dir);
  BOOST_TEST(r.steps_to_target == 300);
  BOOST_TEST(r.examples_to_target == 300 * 32);
}

// A step to the target edited against the rest of the summary (its bracket, examples / batch)
// moved the fit without a word (2026-11-30 audit: 49 -> 3 under steps_lo 47 lost fit.json; 49
// -> 60 beside steps_hi 49 moved B_crit 111 -> 157): read as unreadable, run again.
BOOST_AUTO_TEST_CASE(a_step_to_the_target_that_disagrees_with_its_summary_is_not_read) {
  const fs::path dir = scratch("disagrees");
  const auto summary = [](const std::string& at, const std::string& examples) {
    return R"({"status":"reached_target","steps":400,"steps_lo":200,"steps_hi":300,)"
           R"("global_batch":64,"steps_to_target":)" +
           at + R"(,"examples_to_target":)" + examples + "}";
  };
  write_run(dir, summary("300", "19200"));
  BOOST_TEST(read_trial_result(trial("64_0", 64, 0.1), dir).steps_to_target == 300);
  for (const auto& [at, examples, field] :
       {std::tuple{"150", "9600", "steps_lo 200"}, std::tuple{"350", "22400", "steps_hi 300"},
        std::tuple{"300", "20000", "examples_to_target 20000"}}) {
    write_run(dir, summary(at, examples));
    const TrialResult r = read_trial_result(trial("64_0", 64, 0.1), dir);
    BOOST_TEST(r.status == "running");
    BOOST_TEST(r.unreadable.find(std::string("disagrees with its ") + field) != std::string::npos,
               r.unreadable);
  }
}

BOOST_AUTO_TEST_CASE(missing_running_and_torn_summaries_are_unfinished) {
  const fs::path dir = scratch("unfinished");
  BOOST_TEST(read_trial_result(trial("a", 8, 1), dir).status == "pending");
  std::ofstream(dir / "summary.json") << R"({"status":"running"})";
  BOOST_TEST(read_trial_result(trial("a", 8, 1), dir).status == "running");
  std::ofstream(dir / "summary.json") << R"({"status":"reach)";
  BOOST_TEST(!is_final_status(read_trial_result(trial("a", 8, 1), dir).status));
  for (const char* s : {"reached_target", "budget_exhausted", "diverged", "completed", "failed"}) {
    BOOST_TEST(is_final_status(s));
  }
}

// In an --exec sweep only lbt writes a trial's result: a summary.json the program left (it may,
// while it runs) is unfinished, so a trial cut short by Ctrl-C or kill -9 is run again.
BOOST_AUTO_TEST_CASE(an_exec_trial_reads_only_the_summary_lbt_wrote) {
  const fs::path dir = scratch("own_summary");
  std::ofstream(dir / "summary.json") << R"({"status":"reached_target","steps_to_target":1})";
  BOOST_TEST(read_trial_result(trial("16_0", 16, 1), dir, /*exec_trial=*/true).status == "running");
  BOOST_TEST(read_trial_result(trial("16_0", 16, 1), dir).status == "reached_target");
  for (const char* writer : {"lbt sweep --exec", "lbt sweep"}) {
    std::ofstream(dir / "summary.json")
        << R"({"status":"failed","written_by":")" << writer << R"("})";
    BOOST_TEST(read_trial_result(trial("16_0", 16, 1), dir, true).status == "failed", writer);
  }
}

BOOST_AUTO_TEST_CASE(best_csv_keeps_the_fewest_steps_per_batch_and_round_trips_through_the_reader) {
  std::vector<TrialResult> results(5);
  results[0].trial = trial("64_0", 64, 0.05), results[0].status = "reached_target",
  results[0].steps_to_target = 500;
  // An LR and momentum with no short decimal form: both CSVs must give them back exactly (not
  // %.6g's 0.141421), so an LR read from best.csv is the one the trial trained with.
  results[1].trial = trial("64_1", 64, 0.1 * std::sqrt(2.0)), results[1].status = "reached_target",
  results[1].steps_to_target = 300, results[1].trial.momentum = 1.0 - 1.0 / 3.0;
  results[2].trial = trial("64_2", 64, 0.2), results[2].status = "diverged",
  results[2].message = "loss NaN, at step 3";
  results[3].trial = trial("128_0", 128, 0.1), results[3].status = "budget_exhausted";
  results[4].trial = trial("128_1", 128, 0.2), results[4].status = "failed",
  results[4].message = "said \"no\"";
  const auto best = best_per_batch(results);
  BOOST_REQUIRE_EQUAL(best.size(), 2u);
  BOOST_TEST(best[0].best->trial.name == "64_1");
  BOOST_TEST(!best[0].lr_at_edge);  // 0.14 is inside [0.05, 0.2]
  BOOST_TEST(best[1].best == nullptr);

  const fs::path dir = scratch("csv");
  write_sweep_csv(dir / "sweep.csv", results, dir);
  write_best_csv(dir / "best.csv", results, dir);
  const CsvTable sweep = read_csv(dir / "sweep.csv");
  BOOST_REQUIRE_EQUAL(sweep.rows.size(), 5u);
  BOOST_TEST(sweep.rows[2][sweep.column("message")] == "loss NaN, at step 3");
  BOOST_TEST(sweep.rows[4][sweep.column("message")] == "said \"no\"");
  BOOST_TEST(sweep.rows[1][sweep.column("steps_to_target")] == "300");
  const CsvTable b = read_csv(dir / "best.csv");
  BOOST_REQUIRE_EQUAL(b.rows.size(), 2u);
  BOOST_TEST(b.rows[0][b.column("trial")] == "64_1");
  for (const auto& [t, row] : {std::pair(&sweep, 1), std::pair(&b, 0)}) {
    BOOST_TEST(t->number(row, t->column("lr")) == 0.1 * std::sqrt(2.0));
    BOOST_TEST(t->number(row, t->column("momentum")) == 1.0 - 1.0 / 3.0);
  }
  BOOST_TEST(b.rows[1][b.column("status")] == "unreached");
  BOOST_TEST(b.rows[1][b.column("batch_size")] == "128");
}

// best.csv's median over the best LR's seeds reads a seed short of the target as lbt fit does
// (seed_steps): above its last step, so 100, 120 and one out of budget at 500 give 120 (the
// two that reached gave 110), and 1 of 3 gives no median (empty), not that one's steps.
BOOST_AUTO_TEST_CASE(best_csv_median_counts_seeds_short_of_the_target_as_the_fit_does) {
  std::vector<TrialResult> results(6);
  const auto seed = [&](std::size_t i, std::int64_t B, int s, const char* status, int steps) {
    results[i].trial = trial(std::to_string(B) + "_" + std::to_string(s), B, 0.1);
    results[i].trial.seed = s;
    results[i].status = status;
    const bool met = std::string(status) == "reached_target";
    results[i].steps_to_target = met ? steps : -1;
    results[i].steps = met ? steps + 10 : steps;
  };
  seed(0, 16, 0, "reached_target", 100);
  seed(1, 16, 1, "reached_target", 120);
  seed(2, 16, 2, "budget_exhausted", 500);
  seed(3, 32, 0, "reached_target", 60);
  seed(4, 32, 1, "pruned", 40);
  seed(5, 32, 2, "pruned", 50);
  const auto best = best_per_batch(results);
  BOOST_REQUIRE_EQUAL(best.size(), 2u);
  BOOST_TEST(best[0].seeds.size() == 3u);
  BOOST_TEST(best[0].steps_median == 120.0);
  BOOST_TEST(best[0].seeds_reached == 2);
  BOOST_TEST(std::isnan(best[1].steps_median));
  BOOST_TEST(best[1].steps_min == 60);
  BOOST_TEST(best[1].steps_max == 60);
}

BOOST_AUTO_TEST_CASE(equal_steps_pick_the_same_winner_whatever_the_wall_times) {
  // Wall time must not break ties: the winner would depend on machine load.
  for (double slow_first : {true, false}) {
    std::vector<TrialResult> results(3);
    results[0].trial = trial("64_0", 64, 0.2), results[0].status = "reached_target";
    results[1].trial = trial("64_1", 64, 0.1), results[1].status = "reached_target";
    results[2].trial = trial("64_2", 64, 0.4), results[2].status = "reached_target";
    for (auto& r : results) r.steps_to_target = 300;
    results[2].steps_to_target = 400;
    results[0].wall_time_s = slow_first ? 9.0 : 1.0;
    results[1].wall_time_s = slow_first ? 1.0 : 9.0;
    const auto best = best_per_batch(results);
    BOOST_TEST(best[0].best->trial.name == "64_1");  // equal steps: the smaller LR
  }
}

// A trial that diverged before its first evaluation measured no validation metric: its
// sweep.csv cell is empty (pandas reads NaN), never 0 (a value).
BOOST_AUTO_TEST_CASE(metrics_never_measured_are_empty_cells_not_zeros) {
  const fs::path dir = scratch("diverged_early");
  std::ofstream(dir / "summary.json")
      << R"({"status":"diverged","steps":0,"steps_to_target":null,"best_val_accuracy":null,
            "best_val_loss":null,"wall_time_s":0.02,"divergence_reason":"loss is NaN"})";
  std::vector<TrialResult> results = {read_trial_result(trial("8_0", 8, 10.0), dir)};
  BOOST_TEST(std::isnan(results[0].best_val_accuracy));
  BOOST_TEST(std::isnan(results[0].best_val_loss));
  write_sweep_csv(dir / "sweep.csv", results, dir);
  const CsvTable t = read_csv(dir / "sweep.csv");
  BOOST_REQUIRE_EQUAL(t.rows.size(), 1u);
  BOOST_TEST(t.rows[0][t.column("best_val_accuracy")] == "");
  BOOST_TEST(t.rows[0][t.column("best_val_loss")] == "");
  BOOST_TEST(t.rows[0][t.column("steps_to_target")] == "");
  BOOST_TEST(t.rows[0][t.column("wall_time_s")] == "0.02");
  // A failed trial's summary written by lbt sweep has no wall time: empty, not 0.
  std::ofstream(dir / "summary.json") << R"({"status":"failed","error":"exited with code 2"})";
  results = {read_trial_result(trial("8_0", 8, 10.0), dir)};
  write_sweep_csv(dir / "sweep.csv", results, dir);
  const CsvTable f = read_csv(dir / "sweep.csv");
  BOOST_TEST(f.rows[0][f.column("wall_time_s")] == "");
}

// The intervals beside the measured values: best_val_accuracy / best_val_loss from the trial's
// summary.json, B_simple at the start and at the target from the records those values come from
// (the first resolved one; the last resolved one at or before the target step).
BOOST_AUTO_TEST_CASE(sweep_csv_carries_each_measured_value_with_its_interval) {
  const fs::path dir = scratch("intervals");
  write_run(dir, R"({"status":"reached_target","steps":300,"steps_to_target":300,
                     "best_val_accuracy":0.86,"best_val_accuracy_ci95":[0.8531,0.8666],
                     "best_val_loss":0.41,"best_val_loss_ci95":[0.3985,0.4215],
                     "target":"val_accuracy>=0.85"})");
  std::ofstream(dir / "noise.jsonl")
      << R"({"step":50,"estimator":"two_batch","b_simple":null,"b_simple_ci95":[null,null]})"
         "\n"
      << R"({"step":100,"estimator":"two_batch","b_simple":120.5,"b_simple_ci95":[80.25,null]})"
         "\n"
      << R"({"step":300,"estimator":"two_batch","b_simple":210,"b_simple_ci95":[150,300]})"
         "\n"
      << R"({"step":400,"estimator":"two_batch","b_simple":260,"b_simple_ci95":[200,330]})"
         "\n";
  const std::vector<TrialResult> results = {read_trial_result(trial("64_0", 64, 0.1), dir)};
  write_sweep_csv(dir / "sweep.csv", results, dir);
  const CsvTable t = read_csv(dir / "sweep.csv");
  BOOST_REQUIRE_EQUAL(t.rows.size(), 1u);
  const auto cell = [&](const char* column) { return t.rows[0][t.column(column)]; };
  BOOST_TEST(cell("best_val_accuracy_lo") == "0.8531");
  BOOST_TEST(cell("best_val_accuracy_hi") == "0.8666");
  BOOST_TEST(cell("best_val_loss_lo") == "0.3985");
  BOOST_TEST(cell("best_val_loss_hi") == "0.4215");
  BOOST_TEST(cell("b_simple_start") == "120.5");
  BOOST_TEST(cell("b_simple_start_lo") == "80.25");
  BOOST_TEST(cell("b_simple_start_hi") == "");  // not resolved: empty, never a number
  BOOST_TEST(cell("b_simple_at_target") == "210");
  BOOST_TEST(cell("b_simple_at_target_lo") == "150");
  BOOST_TEST(cell("b_simple_at_target_hi") == "300");
  BOOST_TEST(cell("b_simple_avg") == "210");  // the median of 120.5, 210 and 260: no interval
  BOOST_TEST(cell("b_simple_avg_lo") == "");
  BOOST_TEST(cell("b_simple_avg_hi") == "");
  // best.csv's row for a batch size no trial reached has as many cells as its header.
  std::vector<TrialResult> unreached(1);
  unreached[0].trial = trial("128_0", 128, 0.1), unreached[0].status = "budget_exhausted";
  write_best_csv(dir / "best.csv", unreached, dir);
  const CsvTable b = read_csv(dir / "best.csv");
  BOOST_REQUIRE_EQUAL(b.rows.size(), 1u);
  BOOST_TEST(b.rows[0].size() == b.header.size());
  BOOST_TEST(b.rows[0][b.column("status")] == "unreached");
  BOOST_TEST(b.rows[0][b.column("trials")] == "1");
}

// A failed program's message is the end of its log: the last lines, each cut to its first
// kTailLineChars characters, read from the file's last kTailWindow bytes alone (a program may
// print gigabytes, or one line of them: the whole log was read into memory before); of a banner
// ending it (mpirun's), the first lines, which say what is wrong.
BOOST_AUTO_TEST_CASE(a_failure_message_is_read_from_the_end_of_a_log_however_long) {
  using lbt::experiments::kTailLineChars;
  using lbt::experiments::kTailWindow;
  using lbt::experiments::tail_lines;
  const fs::path dir = scratch("tails");
  {
    std::ofstream log(dir / "long.log");
    const std::string filler(1000, 'x');
    for (int i = 0; i < 20000; ++i) log << i << filler << '\n';  // 20 MB
    log << "Traceback (most recent call last):\nValueError: bad batch\n\n";
  }
  BOOST_TEST(tail_lines(dir / "long.log", 2) ==
             "Traceback (most recent call last): | ValueError: bad batch");
  const std::string three = tail_lines(dir / "long.log", 3);
  BOOST_TEST(three.rfind("19999xxx", 0) == 0, three);  // the whole line before, cut
  BOOST_TEST(three.find(std::string(kTailLineChars - 5, 'x') + " ... | Traceback") !=
             std::string::npos);
  // One line longer than the window: its end is all there is, cut to the line limit.
  std::ofstream(dir / "one_line.log")
      << std::string(3 * kTailWindow, 'y') << "\r" << std::string(2 * kTailWindow, 'z');
  BOOST_TEST(tail_lines(dir / "one_line.log", 3) == std::string(kTailLineChars, 'z') + " ...");
  std::ofstream(dir / "short.log") << "a\n\nb\r progress 10%\rdone\nc";
  BOOST_TEST(tail_lines(dir / "short.log", 5) == "a | done | c");
  // Colours and control bytes are not message text; a tab is a space.
  std::ofstream(dir / "colour.log") << "\x1b[1;31mError\x1b[0m:\tbad\x01\x7f" << '\0' << "!\n";
  BOOST_TEST(tail_lines(dir / "colour.log", 1) == "Error: bad!");
  BOOST_TEST(tail_lines(dir / "short.log", 1) == "c");
  BOOST_TEST(tail_lines(dir / "missing.log", 3) == "");
  std::ofstream(dir / "banner.log")
      << "----\nNot enough slots\nfor 4\n\n  lbt\n\nuse --oversubscribe\n----\n";
  BOOST_TEST(tail_lines(dir / "banner.log", 2) == "Not enough slots | for 4");
}

// A program's evaluations: a metric outside its range (accuracy as a percentage) fails the
// trial naming the line, as lbt refuses such a target; a step past int64 is past the budget,
// not "negative".
BOOST_AUTO_TEST_CASE(a_programs_slips_fail_its_trial_or_stop_at_its_budget) {
  const fs::path dir = scratch("exec_slips");
  const auto summary_of = [&](const std::string& eval_lines, const std::string& target,
                              std::int64_t budget) {
    std::ofstream(dir / "eval.jsonl") << eval_lines;
    Trial t = trial("16_0", 16, 0.1);
    t.steps = budget;
    ChildExit exit;
    exit.exit_code = 0;
    write_exec_summary(t, dir, lbt::trainer::parse_target(target), exit, dir / "program.log",
                       false);
    return nlohmann::json::parse(lbt::io::read_file(dir / "summary.json"));
  };
  auto s =
      summary_of("{\"step\": 10, \"val_accuracy\": 10}\n{\"step\": 20, \"val_accuracy\": 86}\n",
                 "val_accuracy>=0.85", 100);
  BOOST_TEST(s["status"] == "failed");
  BOOST_TEST(s["error"].get<std::string>().find(
                 "eval.jsonl line 1: val_accuracy 10 is outside [0, 1] (accuracy is a fraction") !=
                 std::string::npos,
             s.dump());
  s = summary_of("{\"step\": 10, \"val_loss\": -0.5}\n", "val_loss<=0.1", 100);
  BOOST_TEST(s["status"] == "failed");
  BOOST_TEST(s["error"].get<std::string>().find("val_loss -0.5 is outside [0, inf)") !=
             std::string::npos);
  s = summary_of(
      "{\"step\": 10, \"val_loss\": 0.5}\n{\"step\": 9223372036854775808, \"val_loss\": 0.1}\n",
      "val_loss<=0.1", 100);
  BOOST_TEST(s["status"] == "budget_exhausted", s.dump());
  BOOST_TEST(s["budget_warning"].get<std::string>().find("(step 9223372036854775808)") !=
             std::string::npos);
  s = summary_of("{\"step\": 18446744073709551615, \"val_loss\": 0.1}\n", "val_loss<=0.1", 0);
  BOOST_TEST(s["status"] == "failed");
  BOOST_TEST(s["error"].get<std::string>().find(
                 "step 18446744073709551615 is past any step count") != std::string::npos,
             s.dump());
  s = summary_of("{\"step\": 10, \"loss\": 0.5}\n", "val_loss<=0.1", 100);  // never val_loss
  BOOST_TEST(s["error"].get<std::string>().find("holds the target's metric \"val_loss\"") !=
             std::string::npos);
}
