// A sweep's files damaged or planted, through the real `lbt` binary: best.csv, sweep.csv and
// sweep.json cut short or edited fail naming the file and the fix; `lbt plan --out` never
// replaces a file it did not write; `lbt fit` on a directory without a sweep is a wrong option;
// lock files that link elsewhere are refused, their targets kept; steps falling as 1/B throughout
// give B_crit unresolved (not 1e18), which lbt plan declines. Exit codes: 2 config, 3 data.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/careless_support.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using lbt::test::after_line;
using lbt::test::cut;
using lbt::test::error_line;
using lbt::test::expect_refusal;
using lbt::test::plan;
using lbt::test::real_sweep;
using lbt::test::Result;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using lbt::test::sweep_copy;

BOOST_AUTO_TEST_CASE(plan_out_refuses_a_file_it_did_not_write_and_replaces_its_own) {
  const fs::path victim = scratch() / "victim.toml";
  std::ofstream(victim) << "# my own notes\nkeep = true\n";
  expect_refusal(plan(real_sweep(), "--out " + victim.string()), 2,
                 {victim.string(), "lbt plan did not write it"});
  BOOST_TEST(slurp(victim) == "# my own notes\nkeep = true\n");

  const fs::path mine = scratch() / "mine.toml";
  Result r = plan(real_sweep(), "--out " + mine.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = plan(real_sweep(), "--out " + mine.string());  // its own output: replaced
  BOOST_TEST(r.code == 0, r.err);
  r = plan(real_sweep(), "--out " + victim.string() + " --overwrite");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(slurp(victim).starts_with("# Written by lbt plan from "));
}

// The plan's JSON goes beside its config, not into the sweep (where two plans with different
// --out replaced each other's, and a read-only sweep could not be planned from); a JSON there
// that lbt plan did not write is kept, and --out naming a .json is refused.
BOOST_AUTO_TEST_CASE(plan_json_goes_beside_the_config_out_names) {
  fs::remove(real_sweep() / "plan.json");
  const fs::path mine = scratch() / "beside" / "b512.toml";
  fs::create_directories(mine.parent_path());
  Result r = plan(real_sweep(), "--out " + mine.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto json = nlohmann::json::parse(slurp(scratch() / "beside" / "b512.json"));
  BOOST_TEST(json["config"].get<std::string>() == fs::absolute(mine).string());
  BOOST_TEST(!fs::exists(real_sweep() / "plan.json"));

  const fs::path theirs = scratch() / "beside" / "results.json";
  std::ofstream(theirs) << "[1, 2, 3]\n";
  expect_refusal(plan(real_sweep(), "--out " + (scratch() / "beside" / "results.toml").string()), 2,
                 {theirs.string(), "lbt plan did not write it"});
  BOOST_TEST(slurp(theirs) == "[1, 2, 3]\n");
  BOOST_TEST(!fs::exists(scratch() / "beside" / "results.toml"));
  expect_refusal(plan(real_sweep(), "--out " + theirs.string() + " --overwrite"), 2,
                 {"names a .json file"});
  BOOST_TEST(slurp(theirs) == "[1, 2, 3]\n");
}

// An edited best.csv cannot send lbt fit to read runs outside the sweep.
BOOST_AUTO_TEST_CASE(a_best_csv_run_dir_outside_the_trials_is_refused) {
  for (const std::string outside : {"../../elsewhere", "/tmp", "trials/../../elsewhere"}) {
    BOOST_TEST_CONTEXT(outside) {
      const fs::path dir = sweep_copy("best_run_dir");
      std::string text = slurp(dir / "best.csv");
      const auto at = text.find(",trials/");
      BOOST_REQUIRE(at != std::string::npos);
      text.replace(at + 1, text.find(',', at + 1) - at - 1, outside);
      std::ofstream(dir / "best.csv", std::ios::trunc) << text;
      expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3,
                     {(dir / "best.csv").string(), "run_dir '" + outside + "'"});
    }
  }
}

BOOST_AUTO_TEST_CASE(best_csv_cut_mid_header_fails_naming_it_instead_of_using_the_scaling_rule) {
  const fs::path dir = sweep_copy("best_header");
  cut(dir / "best.csv", 100);
  expect_refusal(plan(dir), 3, {(dir / "best.csv").string(), "cut short"});
  expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3, {(dir / "best.csv").string()});
}

// A directory that holds no sweep is a wrong option (exit 2), as lbt plan --from says; it exited
// 1 ("other error").
BOOST_AUTO_TEST_CASE(lbt_fit_on_a_directory_without_a_sweep_is_a_bad_option) {
  const fs::path empty = scratch() / "no_sweep_here";
  fs::create_directories(empty);
  expect_refusal(run_lbt("fit --no-plots " + empty.string()), 2,
                 {"no best.csv in " + empty.string()});
}

// A sweep or run directory from elsewhere whose lock files link to another file: the lock's owner
// line overwrote that file (a resume of a trial, a rerun of the sweep); now each is refused, exit
// 2 naming the link, and the linked file keeps its bytes.
BOOST_AUTO_TEST_CASE(lock_files_that_link_elsewhere_are_refused_and_their_targets_kept) {
  const fs::path dir = sweep_copy("linked_locks");
  const fs::path victim = scratch() / "linked_locks_victim.txt";
  std::ofstream(victim) << "precious\n";
  fs::path trial;
  for (const auto& e : fs::directory_iterator(dir / "trials")) trial = e.path();
  for (const fs::path& lock : {dir / "sweep.lock", trial / "run.lock"}) {
    fs::remove(lock);
    fs::create_symlink(victim, lock);
  }
  expect_refusal(run_lbt("sweep --config " + (scratch() / "sweep.toml").string() +
                         " --no-plots --quiet --out " + dir.string()),
                 2, {(dir / "sweep.lock").string() + " is a symbolic link"});
  expect_refusal(run_lbt("train --quiet --resume " + trial.string()), 2,
                 {(trial / "run.lock").string() + " is a symbolic link"});
  BOOST_TEST(slurp(victim) == "precious\n");
}

BOOST_AUTO_TEST_CASE(a_truncated_sweep_json_is_named_with_the_fix) {
  const fs::path dir = sweep_copy("manifest");
  cut(dir / "sweep.json", 40);
  const Result r = plan(dir);
  expect_refusal(r, 3, {(dir / "sweep.json").string(), "cut short"});
  BOOST_TEST(r.err.find("parse_error") == std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(sweep_csv_cut_mid_row_or_at_a_line_end_blames_sweep_csv) {
  const fs::path mid = sweep_copy("sweep_mid_row");
  cut(mid / "sweep.csv", after_line(mid / "sweep.csv", 2) + 30);
  expect_refusal(plan(mid), 3, {(mid / "sweep.csv").string(), "line 3", "cut short"});

  // Whole lines missing: best.csv still lists batch sizes whose best trial sweep.csv lost.
  const fs::path lines = sweep_copy("sweep_lines");
  cut(lines / "sweep.csv", after_line(lines / "sweep.csv", 3));
  for (const Result& r : {plan(lines), run_lbt("fit --no-plots " + lines.string())}) {
    expect_refusal(r, 3, {(lines / "sweep.csv").string(), "best.csv lists"});
    BOOST_TEST(error_line(r.err).find("best.csv has") == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(an_edited_cell_that_is_not_a_number_is_named_by_line_and_column) {
  const fs::path dir = sweep_copy("edited");
  std::string text = slurp(dir / "best.csv");
  const std::size_t row = after_line(dir / "best.csv", 2);  // line 3's first field: the trial
  const std::size_t field = text.find(',', row) + 1;        // ... then batch_size
  text.replace(field, text.find(',', field) - field, "3x2");
  std::ofstream(dir / "best.csv", std::ios::trunc) << text;
  expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3,
                 {(dir / "best.csv").string(), "line 3", "batch_size", "'3x2'"});
}

namespace {

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

// Sets `column` of the first row whose `where` column reads `is` (the columns before a quoted
// field: plain CSV), and returns that row's line number.
int set_cell(const fs::path& csv, const std::string& where, const std::string& is,
             const std::string& column, const std::string& value) {
  std::stringstream in(slurp(csv));
  std::string out, line;
  std::getline(in, line);
  const std::vector<std::string> header = fields_of(line);
  const auto index = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  out = line + "\n";
  int number = 1, found = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f = fields_of(line);
    ++number;
    if (found == 0 && f.at(index(where)) == is) {
      found = number;
      const std::size_t at = index(column);
      std::size_t start = 0;
      for (std::size_t i = 0; i < at; ++i) start = line.find(',', start) + 1;
      line.replace(start, f.at(at).size(), value);
    }
    out += line + "\n";
  }
  BOOST_REQUIRE(found > 0);
  std::ofstream(csv, std::ios::trunc) << out;
  return found;
}

}  // namespace

// Numbers that parse but cannot be what a sweep wrote: a step that is not a whole number or
// not positive, an empty bracket, a batch of 0, a negative LR. Each was read as is before
// (a bracket (lo, hi] with lo > hi moved the fit; a step of 0 failed the fit with exit 1 and a
// hint about the target).
BOOST_AUTO_TEST_CASE(an_edited_number_no_sweep_writes_is_named_by_line_and_column) {
  struct Edit {
    const char* file;
    const char* column;
    const char* value;
    const char* why;
  };
  for (const Edit& e : {Edit{"best.csv", "steps_to_target", "12.5", "is not a whole number >= 1"},
                        Edit{"best.csv", "steps_to_target", "0", "is not a whole number >= 1"},
                        Edit{"sweep.csv", "steps_lo", "100000", "holds no step"},
                        Edit{"sweep.csv", "steps_hi", "-3", "is not a whole number >= 1"},
                        Edit{"sweep.csv", "batch_size", "0", "is not a whole number >= 1"},
                        Edit{"best.csv", "lr", "-0.5", "is not positive"}}) {
    const fs::path dir = sweep_copy("numbers");
    const std::string where = std::string(e.file) == "best.csv" ? "status" : "best";
    const int line = set_cell(dir / e.file, where, where == "status" ? "reached_target" : "true",
                              e.column, e.value);
    expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3,
                   {(dir / e.file).string(), "line " + std::to_string(line), e.column, e.why});
  }
}

// lbt plan records the sweep's directory in plan.json and plan.toml, and lbt cbs the run's in
// cbs.json: JSON holds UTF-8 only, so a path that is not is one error naming it (exit 2), where
// nlohmann's bare "invalid UTF-8 byte" line stopped lbt plan before.
BOOST_AUTO_TEST_CASE(a_from_directory_whose_path_is_not_utf8_is_refused_naming_it) {
  const fs::path dir = scratch() / "not_utf8_\xff";
  fs::remove_all(dir);
  fs::rename(sweep_copy("to_rename"), dir);
  fs::remove(dir / "plan.json");  // an earlier case's plan of the shared sweep
  expect_refusal(plan(dir), 2, {"--from", "is not UTF-8"});
  BOOST_TEST(!fs::exists(dir / "plan.json"));
  expect_refusal(run_lbt("cbs --from " + dir.string() + " --at-steps 1"), 2,
                 {"--from", "is not UTF-8"});
}

// plan.toml's header comment names the sweep's directory: a newline in its path ended the comment
// and made the rest TOML (here a table lbt train refused, or any key it would have read).
BOOST_AUTO_TEST_CASE(a_plan_of_a_directory_whose_name_holds_newlines_runs_as_written) {
  const fs::path dir = scratch() / "nl\n[evil]\nx = 1\n";
  fs::remove_all(dir);
  fs::rename(sweep_copy("to_rename_nl"), dir);
  fs::remove(dir / "plan.toml");
  const Result r =
      run_lbt("plan --from '" + dir.string() + "' --max-steps 200 --resamples 50");  // quoted
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const std::string toml = slurp(dir / "plan.toml");
  BOOST_TEST(toml.rfind("# Written by lbt plan from ", 0) == 0);
  BOOST_TEST(toml.find("nl?[evil]?x = 1?") != std::string::npos, toml);
  BOOST_TEST(toml.find("\n[evil]") == std::string::npos, toml);
  const Result check = run_lbt("train --check --config '" + (dir / "plan.toml").string() + "'");
  BOOST_TEST(check.code == 0, check.err);
}

// The committed sweep (best.csv only: it predates brackets) with steps exactly 4096 / B at
// B = 4 ... 4096: every batch size needs 4096 examples. lbt fit printed S_min ~ 1e-15 and
// B_crit ~ 1e18 as a measurement; B_crit is unresolved now, with the warning and E_min = 4096,
// and lbt plan, which has no knee to plan on, says so (exit 1, like a sweep with no critical
// batch) and writes nothing.
BOOST_AUTO_TEST_CASE(steps_that_fall_as_1_over_b_throughout_leave_b_crit_unresolved) {
  const fs::path dir = scratch() / "perfect_scaling";
  fs::remove_all(dir);
  fs::copy(fs::path(LBT_SOURCE_DIR) / "tests/notebooks/data/sweep", dir,
           fs::copy_options::recursive);
  std::istringstream in(slurp(dir / "best.csv"));
  std::ostringstream out;
  std::string line;
  std::getline(in, line);
  out << line << '\n';  // trial,batch_size,lr,momentum,status,steps_to_target,examples,steps,...
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (line.back() == ',') cells.emplace_back();
    BOOST_REQUIRE(cells[4] == "reached_target");
    const long steps = 4096 / std::stol(cells[1]);
    cells[5] = cells[7] = std::to_string(steps);
    cells[6] = "4096";
    for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << cells[i];
    out << '\n';
  }
  std::ofstream(dir / "best.csv", std::ios::trunc) << out.str();

  const Result fit = run_lbt("fit --no-plots " + dir.string());
  BOOST_TEST_REQUIRE(fit.code == 0, fit.err);
  BOOST_TEST(fit.out.find("E_min = 4096 [4096, 4096], B_crit unresolved") != std::string::npos,
             fit.out);
  BOOST_TEST(fit.out.find("warning: the steps to the target fall as 1/B") != std::string::npos,
             fit.out);
  expect_refusal(plan(dir), 1, {"scales perfectly at every batch size", "past 100x the largest"});
  BOOST_TEST(!fs::exists(dir / "plan.json"));
}

// A sweep file replaced by a FIFO (or a link to /dev/zero) blocked lbt fit and lbt plan for
// ever, and a directory read as an empty file; an emptied base_config.toml planned lbt's default
// model under the sweep's predictions (2026-11-29 audit). Each is refused, naming the file.
BOOST_AUTO_TEST_CASE(special_files_and_an_emptied_trials_config_are_refused_not_read) {
  const fs::path fifo = sweep_copy("fifo_csv");
  fs::remove(fifo / "sweep.csv");
  BOOST_REQUIRE(::mkfifo((fifo / "sweep.csv").c_str(), 0600) == 0);
  expect_refusal(run_lbt("fit --no-plots " + fifo.string()), 3,
                 {(fifo / "sweep.csv").string(), "not a regular file (a FIFO or device)"});
  const fs::path device = sweep_copy("device_json");
  fs::remove(device / "sweep.json");
  fs::create_symlink("/dev/zero", device / "sweep.json");
  expect_refusal(plan(device), 3, {(device / "sweep.json").string(), "not a regular file"});
  const fs::path folder = sweep_copy("folder_csv");
  fs::remove(folder / "best.csv");
  fs::create_directory(folder / "best.csv");
  expect_refusal(run_lbt("fit --no-plots " + folder.string()), 3,
                 {(folder / "best.csv").string(), "(a directory)"});
  const fs::path emptied = sweep_copy("emptied_config");
  std::ofstream(emptied / "base_config.toml", std::ios::trunc).flush();
  expect_refusal(plan(emptied), 3,
                 {(emptied / "base_config.toml").string(), "not the trials' config"});
}

// Counts that overflowed or ran for days: workers x micro-batch past 2^63 (a negative batch, and
// from lbt cbs's directory a division by it: SIGFPE), and 2^31 bootstrap resamples.
BOOST_AUTO_TEST_CASE(counts_that_would_overflow_or_run_for_days_are_refused) {
  expect_refusal(run_lbt("plan --from " + real_sweep().string() +
                         " --workers 2 --micro-batch 4611686018427387904"),
                 2, {"--micro-batch"});
  expect_refusal(run_lbt("fit --no-plots --resamples 2147483647 " + real_sweep().string()), 2,
                 {"--resamples", "100000"});
}

// Rows pasted twice counted as more seeds or fitted a batch size twice, and a best trial in
// sweep.csv that best.csv does not list at the target was fitted beside best.csv's (B_crit
// 305.8 -> 116.7 from a row of a batch size the sweep never ran; 2026-11-29 audits).
BOOST_AUTO_TEST_CASE(repeated_rows_and_files_that_disagree_are_refused) {
  const auto first_row = [](const std::string& text) {
    const auto start = text.find('\n') + 1;
    return text.substr(start, text.find('\n', start) + 1 - start);
  };
  for (const char* file : {"sweep.csv", "best.csv"}) {
    BOOST_TEST_CONTEXT(file) {
      const fs::path dir = sweep_copy("repeated_row");
      const std::string text = slurp(dir / file), bom = "\xEF\xBB\xBF";
      std::string row = first_row(text);  // best.csv's batch size as 8.0; sweep.csv behind a BOM
      if (file[0] == 'b') row.insert(row.find(',', row.find(',') + 1), ".0");
      std::ofstream(dir / file, std::ios::trunc) << (file[0] == 's' ? bom : "") << text << row;
      expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3,
                     {(dir / file).string(), "appears twice"});
    }
  }
  const fs::path dir = sweep_copy("disagreeing_best");
  std::string best = slurp(dir / "best.csv");
  const auto reached = best.find(",reached_target,");
  BOOST_REQUIRE(reached != std::string::npos);
  best.replace(reached, 16, ",budget_exhausted,");
  std::ofstream(dir / "best.csv", std::ios::trunc) << best;
  expect_refusal(run_lbt("fit --no-plots " + dir.string()), 3,
                 {(dir / "best.csv").string(), "lists no batch size", "one of the two was edited"});
  // A measured noise scale below 0 printed B_crit / B_simple = -6.1.
  const fs::path noise = sweep_copy("negative_noise");
  std::string rows = slurp(noise / "best.csv");
  const std::string header = rows.substr(0, rows.find('\n'));
  const auto column =
      std::count(header.begin(), header.begin() + header.find("b_simple_avg,"), ',');
  const auto line = rows.find(",reached_target,");
  auto at = rows.rfind('\n', line) + 1;
  for (long i = 0; i < column; ++i) at = rows.find(',', at) + 1;
  rows.insert(at, "-50");  // the cell was empty: no noise measured
  std::ofstream(noise / "best.csv", std::ios::trunc) << rows;
  expect_refusal(run_lbt("fit --no-plots " + noise.string()), 3,
                 {(noise / "best.csv").string(), "b_simple_avg is a noise scale: 0 or above"});
}

// lbt noise (or train) --out SWEEP/trials/NAME --overwrite replaced a sweep's trial with another
// run, whose B_noise lbt fit then reported as the sweep's (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(overwrite_refuses_to_replace_a_sweeps_own_trial) {
  const fs::path dir = sweep_copy("member_trial");
  const fs::path trial = fs::directory_iterator(dir / "trials")->path();
  const std::string summary = slurp(trial / "summary.json");
  expect_refusal(run_lbt("train --config " + (dir / "base_config.toml").string() + " --out " +
                         trial.string() + " --overwrite --set train.steps=5"),
                 2, {trial.string(), "is one of the runs of", "--overwrite would put another"});
  BOOST_TEST(slurp(trial / "summary.json") == summary);
}

// A directory named plots.log (holding files) threw the filesystem's own "cannot remove" after
// fit.json was written; now the plots are skipped with one warning and the fit stands.
BOOST_AUTO_TEST_CASE(a_plots_log_that_cannot_be_replaced_skips_the_plots_with_a_warning) {
  const fs::path dir = sweep_copy("plots_log_dir");
  fs::create_directories(dir / "plots.log" / "kept");
  const Result r = run_lbt("fit " + dir.string());
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(
      r.err.find("warning: plots skipped: " + (dir / "plots.log").string()) != std::string::npos,
      r.err);
  BOOST_TEST(fs::exists(dir / "plots.log" / "kept"));
  BOOST_TEST(fs::exists(dir / "fit.json"));
}
