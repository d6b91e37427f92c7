// Careless and hostile input through the real `lbt` binary: `lbt memory` refuses sizes past 64
// bits; a layer too large for the machine is refused, named, before any allocation; a
// validation split too large gets a size that fits; an output path under a file, or holding
// another command's results, is one line naming it; a batch given twice gets one column. A
// sweep's damaged files: test_damaged_sweep_files.cpp. Exit codes as the README lists them: 2
// config, 3 data.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/careless_support.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using lbt::test::error_line;
using lbt::test::expect_refusal;
using lbt::test::real_sweep;
using lbt::test::Result;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using lbt::test::sweep_copy;

namespace {

// The CNN preset with its model replaced by one conv layer (`conv_fields`) and a classifier.
fs::path conv_config(const std::string& name, const std::string& conv_fields) {
  std::string text = slurp(std::string(LBT_SOURCE_DIR) + "/experiments/configs/fmnist_cnn.toml");
  const auto spec = text.find("spec = ");
  text.erase(spec, text.find('\n', spec) - spec);
  const fs::path path = scratch() / (name + ".toml");
  std::ofstream(path) << text << "\n[[model.layers]]\ntype = \"conv\"\n"
                      << conv_fields << "[[model.layers]]\ntype = \"global_avgpool\"\n"
                      << "[[model.layers]]\ntype = \"linear\"\nout = 10\n";
  return path;
}

const std::string kSmallData = " --set data.train_limit=2000 --set data.validation_size=500";

}  // namespace

BOOST_AUTO_TEST_CASE(memory_refuses_a_batch_whose_bytes_pass_64_bits_naming_the_micro_batch) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const Result r = run_lbt("memory --config " + cfg.string() + " -b 9223372036854775807");
  expect_refusal(r, 2, {"micro-batch 9223372036854775807", "too large to count"});

  // A batch that counts: the column shows it whole, and no part is negative or zero.
  const Result ok = run_lbt("memory --config " + cfg.string() + " -b 999999999999");
  BOOST_REQUIRE_MESSAGE(ok.code == 0, ok.err);
  BOOST_TEST(ok.out.find("999999999999 / 999999999999") != std::string::npos, ok.out);
  BOOST_TEST(ok.out.find(" -") == std::string::npos, ok.out);
  BOOST_TEST(ok.out.find("activations + their grads                0 B") == std::string::npos,
             ok.out);
}

// A batch size whose best trial ran out of budget (its median censored) is left out of lbt
// plan's fit as lbt fit leaves it out: plan exited 1, "batch size 8 has steps nan" (2026-11-29
// audit). Seeds 1 and 2 of B = 8's best LR are rewritten as lbt sweep writes a trial out of
// budget: the median over the three seeds is then censored.
BOOST_AUTO_TEST_CASE(plan_leaves_out_a_censored_batch_size_as_fit_does) {
  (void)real_sweep();  // writes the config
  const fs::path dir = scratch() / "censored_plan";
  const Result swept =
      run_lbt("sweep --config " + (scratch() / "sweep.toml").string() +
              " --set sweep.seeds=3 --jobs 2 --no-plots --quiet --out " + dir.string());
  BOOST_REQUIRE_MESSAGE(swept.code == 0, swept.err);
  std::istringstream in(slurp(dir / "sweep.csv"));
  std::string header, line, text;
  std::getline(in, header);
  const auto fields = [](const std::string& row) {
    std::vector<std::string> f;
    std::stringstream ss(row);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (!row.empty() && row.back() == ',') f.push_back("");
    return f;
  };
  const std::vector<std::string> names = fields(header);
  const auto at = [&](const char* name) {
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  while (std::getline(in, line)) {
    std::vector<std::string> f = fields(line);
    if (f.size() == names.size() && f[at("batch_size")] == "8" && f[at("best")] == "true" &&
        f[at("seed")] != "0") {
      f[at("status")] = "budget_exhausted", f[at("steps")] = "400";
      for (const char* k :
           {"steps_to_target", "examples_to_target", "steps_lo", "steps_hi", "ema_steps_lo",
            "ema_steps_hi", "first_passage_steps_lo", "first_passage_steps_hi"})
        if (at(k) < f.size()) f[at(k)].clear();
      line.clear();
      for (std::size_t i = 0; i < f.size(); ++i) line += (i ? "," : "") + f[i];
    }
    text += line + "\n";
  }
  std::ofstream(dir / "sweep.csv", std::ios::trunc) << header << "\n" << text;
  const Result fit = run_lbt("fit " + dir.string() + " --no-plots");
  BOOST_REQUIRE_MESSAGE(fit.code == 0, fit.err);
  const auto censored = nlohmann::json::parse(slurp(dir / "fit.json"))["batch_sizes_censored"];
  BOOST_TEST(censored.size() == 1u, censored.dump());
  const Result planned = lbt::test::plan(dir);
  BOOST_TEST(planned.code == 0, planned.err);
}

// -b replaces the config's batch: it alone must divide over --workers (-b 1026 --workers 3 was
// refused for the config's own 128); a -b that does not is refused with one that does.
BOOST_AUTO_TEST_CASE(a_batch_given_with_workers_is_checked_not_the_config_s) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config (global batch 128)
  for (const char* command : {"memory", "schedule"}) {
    const Result r =
        run_lbt(std::string(command) + " --config " + cfg.string() + " -b 1026 --workers 3");
    BOOST_TEST(r.code == 0, command << ": " << r.err);
  }
  expect_refusal(run_lbt("schedule --config " + cfg.string() + " -b 1024 --workers 3"), 2,
                 {"multiple of --workers (3), got 1024"});
}

BOOST_AUTO_TEST_CASE(a_batch_given_twice_gets_one_column) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const Result csv = run_lbt("schedule --config " + cfg.string() + " -b 64,32,64 --steps 2");
  BOOST_REQUIRE_MESSAGE(csv.code == 0, csv.err);
  BOOST_TEST(csv.out.substr(0, csv.out.find('\n')) == "step,lr_B64,lr_B32", csv.out);
  const Result table = run_lbt("memory --config " + cfg.string() + " -b 64,64");
  BOOST_REQUIRE_MESSAGE(table.code == 0, table.err);
  BOOST_TEST(table.out.find("64 / 64") == table.out.rfind("64 / 64"), table.out);
  BOOST_TEST(table.out.find("note: global batch") == std::string::npos, table.out);
  const Result past = run_lbt("memory --config " + cfg.string() + " -b 64,8192");  // unfillable
  const std::string note = "8192 is past the 3072 training examples: lbt train refuses it";
  BOOST_TEST(past.out.find(note) != std::string::npos, past.out);
}

BOOST_AUTO_TEST_CASE(a_conv_too_large_for_any_machine_is_refused_naming_it_before_allocating) {
  // 10^6 channels of [200028, 200028]: 284 PiB for one example, in memory and train alike.
  const fs::path huge =
      conv_config("huge_conv", "out_channels = 1000000\nkernel = 1\npadding = 100000\n");
  for (const std::string& command :
       {std::string("memory"),
        "train --quiet --set train.steps=2 --out " + (scratch() / "huge_run").string()}) {
    expect_refusal(
        run_lbt(command + " --config " + huge.string() + kSmallData), 2,
        {"model.layers[0] (conv)", "[1000000, 200028, 200028]", "more than this machine"});
  }
}

BOOST_AUTO_TEST_CASE(an_mca_setting_without_a_value_names_the_form_with_an_example) {
  expect_refusal(run_lbt("scaling --config " LBT_SOURCE_DIR
                         "/experiments/configs/synthetic_regression.toml -w 1 --mca foo"),
                 2, {"--mca 'foo' is not NAME=VALUE"});
}

// The B_noise probe keeps each small batch's gradient: a million of them passed --check and
// ended in std::bad_alloc at the probe's step.
BOOST_AUTO_TEST_CASE(a_hessian_probe_of_a_million_small_batches_is_refused_at_check) {
  expect_refusal(run_lbt("noise --check --config " LBT_SOURCE_DIR
                         "/experiments/configs/synthetic_regression.toml --at-steps 10 --set "
                         "noise.hessian.small_batches=1000000"),
                 2, {"noise.hessian.small_batches must be 3 to 1024", "got 1000000"});
}

BOOST_AUTO_TEST_CASE(train_refuses_activations_past_the_machine_naming_the_widest_layer) {
  // 10^6 channels of [24, 24]: 4.3 GiB per example, 4.4 TiB at batch 1024.
  const fs::path wide = conv_config("wide_conv", "out_channels = 1000000\nkernel = 5\n");
  const Result r =
      run_lbt("train --quiet --set train.steps=2 --set train.global_batch=1024 --config " +
              wide.string() + kSmallData + " --out " + (scratch() / "wide_run").string());
  expect_refusal(r, 2, {"Conv2d(1->1000000, k5 s1 p0)", "[1000000, 24, 24]", "batch 1024"});
  // lbt memory estimates it (its job), and finds no micro-batch that fits 16 GiB.
  const Result m = run_lbt("memory --config " + wide.string() + kSmallData);
  BOOST_TEST(m.code == 0, m.err);
  BOOST_TEST(m.out.find("per rank: 0 (optimizer state replicated") != std::string::npos, m.out);
}

// `lbt schedule --plot out.png` writes its data to out.csv: a CSV there that lbt schedule did not
// write is refused before any work and kept; its own is replaced; a .csv plot name is refused.
BOOST_AUTO_TEST_CASE(schedule_plot_never_replaces_a_csv_it_did_not_write) {
  const fs::path dir = scratch() / "schedule_plot";
  fs::create_directories(dir);
  const std::string config = LBT_SOURCE_DIR "/experiments/configs/synthetic_regression.toml";
  const std::string run = "schedule --config " + config + " --steps 30 --plot ";
  std::ofstream(dir / "lr.csv") << "epoch,loss\n1,0.5\n";
  expect_refusal(run_lbt(run + (dir / "lr.png").string()), 2,
                 {(dir / "lr.csv").string(), "lbt schedule did not write"});
  BOOST_TEST(slurp(dir / "lr.csv") == "epoch,loss\n1,0.5\n");
  BOOST_TEST(!fs::exists(dir / "lr.png"));
  expect_refusal(run_lbt(run + (dir / "lr.csv").string()), 2, {"names a CSV file"});
  // An extension matplotlib would not write, or none: refused before any work (Python's
  // traceback after it; "wrote afile" for a file matplotlib named afile.png).
  for (const char* name : {"lr.toml", "afile"})
    expect_refusal(run_lbt(run + (dir / name).string()), 2, {"ends in .png, .pdf or .svg"});
  BOOST_TEST(!fs::exists(dir / "afile.png"));
  // A plot under a file: refused in one line before any work (it was Python's traceback after
  // the work, and a hint that blamed matplotlib); a plot under new directories makes them.
  std::ofstream(dir / "a_file") << "not a directory\n";
  expect_refusal(run_lbt(run + (dir / "a_file" / "lr.png").string()), 2,
                 {"cannot create the plot's directory", "Not a directory"});
  BOOST_TEST(run_lbt(run + (dir / "new" / "lr.png").string()).err.find("Traceback") ==
             std::string::npos);
  BOOST_TEST(slurp(dir / "new" / "lr.csv").starts_with("step,lr\n"));

  Result r = run_lbt(run + (dir / "mine.png").string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_lbt(run + (dir / "mine.png").string());  // its own data: replaced
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(slurp(dir / "mine.csv").starts_with("step,lr\n"));
  BOOST_TEST(slurp(dir / "mine.csv") == r.out);      // the rows printed are the rows kept
  for (const auto& e : fs::directory_iterator(dir))  // no temporary file left beside it
    BOOST_TEST(e.path().filename().string().find(".tmp.") == std::string::npos, e.path());
}

// A validation split as large as the data is refused with a hint that fits this data: it said
// "e.g. --set data.validation_size=10000" whatever the data held, even when 10000 was the
// refused value. The suggested size then trains.
BOOST_AUTO_TEST_CASE(a_validation_split_too_large_suggests_one_that_fits) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const std::string run = "train --config " + cfg.string() + " --quiet --set train.steps=5" +
                          " --set data.synthetic.examples=512 --out " +
                          (scratch() / "split").string() + " --overwrite";
  const Result r = run_lbt(run + " --set data.validation_size=10000");
  expect_refusal(r, 2, {"data.validation_size must be in [0, 512)", "got 10000"});
  const std::string suggested = "--set data.validation_size=102";
  BOOST_TEST(r.err.find("hint: hold out fewer examples than the 512, e.g. " + suggested) !=
                 std::string::npos,
             r.err);
  const Result ok = run_lbt(run + " " + suggested);
  BOOST_TEST(ok.code == 0, ok.err);
}

// No validation split (data.validation_size = 0): nothing is evaluated, so summary.json's
// metrics are null and eval.jsonl stays empty (they read 0.0, as if measured, and a regression
// printed "best val_accuracy: 0.0000"); a target, which is read on that split, is refused.
BOOST_AUTO_TEST_CASE(no_validation_split_measures_nothing_and_refuses_a_target) {
  const std::string train = "train --config " + std::string(LBT_SOURCE_DIR) +
                            "/experiments/configs/synthetic_regression.toml --quiet --set "
                            "train.steps=20 --set data.validation_size=0 --out ";
  const fs::path run = scratch() / "no_validation";
  const Result r = run_lbt(train + run.string() + " --set train.target=\"\"");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["val_examples"] == 0);
  for (const char* k : {"best_val_accuracy", "final_val_accuracy", "best_val_loss",
                        "final_val_loss", "final_val_mse", "final_val_r2"})
    BOOST_TEST(summary[k].is_null(), k << " = " << summary[k]);
  BOOST_TEST(slurp(run / "eval.jsonl").empty());
  const fs::path targeted = scratch() / "no_validation_target";
  const Result t = run_lbt(train + targeted.string() + " --set train.target=\"val_mse<=1\"");
  expect_refusal(t, 2, {"train.target val_mse<=1 is read on the validation split"});
  BOOST_TEST(!fs::exists(targeted / "summary.json"));
}

// An output path under a file, or that is a file (a typo of --out), is one error line with a
// hint naming the path for every command that writes a directory or file, exit 2 as for other
// bad --out values (it was 1); lbt scaling and lbt cbs printed std::filesystem's "filesystem
// error: cannot create directories: ..." without a hint, lbt plan named its temporary file.
BOOST_AUTO_TEST_CASE(an_output_path_under_a_file_is_one_line_naming_it) {
  const fs::path file = scratch() / "plain_file";
  std::ofstream(file) << "not a directory\n";
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const fs::path run = scratch() / "cbs_reference";
  const Result trained = run_lbt("train --config " + cfg.string() +
                                 " --quiet --set train.steps=20 --out " + run.string());
  BOOST_REQUIRE_MESSAGE(trained.code == 0, trained.err);
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"scaling --config " + cfg.string() + " -w 1 --steps 5 --repeats 1 --out ", "study"},
      {"cbs --from " + run.string() + " --at-steps 20 --out ", "cbs"},
      {"sweep --config " + cfg.string() + " --out ", "sweep"},
      {"train --config " + cfg.string() + " --set train.steps=5 --out ", "run"},
      {"plan --from " + real_sweep().string() + " --max-steps 200 --out ", "plan"}};
  for (const auto& [command, what] : commands) {
    BOOST_TEST_CONTEXT(command) {
      const Result r = run_lbt(command + (file / what).string());
      BOOST_TEST(r.code == 2, r.err);
      BOOST_TEST(error_line(r.err).find((file / what).string()) != std::string::npos, r.err);
      BOOST_TEST(error_line(r.err).find("Not a directory") != std::string::npos, r.err);
      BOOST_TEST(r.err.find("filesystem error") == std::string::npos, r.err);
      BOOST_TEST(r.err.find("\nhint: ") != std::string::npos, r.err);
      if (what == "plan") continue;  // lbt plan's --out is a file
      expect_refusal(run_lbt(command + file.string()), 2, {file.string(), "a file is in its way"});
    }
  }
  BOOST_TEST(slurp(file) == "not a directory\n");
}

// --out "$RUNS/$NAME" with both unset is "/": the filesystem root holds only unrelated files,
// which --out accepts, so lbt train wrote config.toml, metrics.jsonl and checkpoints/ into /.
// Every command that writes a directory refuses it, however it is spelled, before writing.
BOOST_AUTO_TEST_CASE(an_out_that_is_the_filesystem_root_is_refused) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  for (const std::string out : {"/", "///", "/tmp/.."}) {
    for (const std::string& command :
         {"train --config " + cfg.string() + " --set train.steps=5 --out ",
          "noise --config " + cfg.string() + " --set train.steps=5 --out ",
          "sweep --config " + cfg.string() + " --out ",
          "scaling --config " + cfg.string() + " -w 1 --steps 5 --repeats 1 --out "}) {
      BOOST_TEST_CONTEXT(command + out) {
        expect_refusal(run_lbt(command + out), 2, {"--out " + out, "is the filesystem root"});
      }
    }
  }
  for (const char* written : {"config.toml", "metrics.jsonl", "sweep.json", "scaling.csv"})
    BOOST_TEST(!fs::exists(fs::path("/") / written), written);
}

// lbt plan --from a directory lbt sweep and lbt cbs did not write (here a training run) says so;
// it said "cannot open DIR/sweep.json" with the hint "check that the file exists".
BOOST_AUTO_TEST_CASE(plan_from_a_run_directory_names_what_it_takes) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const fs::path run = scratch() / "plan_from_run";
  BOOST_REQUIRE(run_lbt("train --config " + cfg.string() + " --quiet --set train.steps=5 --out " +
                        run.string())
                    .code == 0);
  expect_refusal(run_lbt("plan --from " + run.string() + " --max-steps 100"), 2,
                 {run.string(), "neither a sweep directory (sweep.json) nor lbt cbs's"});
}

// One command's --out that names another's directory (a run, a sweep, a folder inside one) is
// refused before anything is written: lbt sweep wrote its trials beside a run's checkpoints, lbt
// cbs its branches into a run's checkpoints/, lbt train its config.toml into a sweep.
BOOST_AUTO_TEST_CASE(an_out_holding_another_commands_results_is_refused_and_left_as_it_was) {
  const fs::path cfg = scratch() / "sweep.toml";
  const fs::path sweep = sweep_copy("mixed_sweep");
  const fs::path run = scratch() / "mixed_run";
  fs::remove_all(run);
  BOOST_REQUIRE(run_lbt("train --config " + cfg.string() + " --quiet --set train.steps=20 --out " +
                        run.string())
                    .code == 0);
  const auto listing = [](const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto run_before = listing(run), sweep_before = listing(sweep);
  const std::string train = "train --config " + cfg.string() + " --set train.steps=5 --out ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sweep --config " + cfg.string() + " --jobs 2 --out " + run.string(), "a run directory"},
      {"sweep --config " + cfg.string() + " --check --out " + run.string(), "a run directory"},
      {"cbs --from " + run.string() + " --at-steps 20 --out " + run.string(), "a run directory"},
      {"cbs --from " + run.string() + " --at-steps 20 --out " + (run / "checkpoints/").string(),
       "a folder lbt keeps inside"},
      {"scaling --config " + cfg.string() + " -w 1 --steps 5 --out " + run.string(),
       "a run directory"},
      {train + sweep.string(), "an lbt sweep directory (sweep.json)"},
      {train + sweep.string() + " --overwrite", "an lbt sweep directory (sweep.json)"},
      {train + sweep.string() + " --check", "an lbt sweep directory (sweep.json)"},
      {train + (sweep / "trials").string(), "a folder lbt keeps inside"},
      {"noise --config " + cfg.string() + " --steps 5 --out " + sweep.string(),
       "an lbt sweep directory"}};
  for (const auto& [command, what] : cases) {
    BOOST_TEST_CONTEXT(command) {
      expect_refusal(run_lbt(command), 2, {what, "would mix"});
    }
  }
  BOOST_TEST(listing(run) == run_before, "the run directory changed");
  BOOST_TEST(listing(sweep) == sweep_before, "the sweep directory changed");

  // A directory of unrelated files (notes) is anyone's.
  const fs::path notes = scratch() / "with_notes";
  fs::create_directories(notes);
  std::ofstream(notes / "README.txt") << "my notes\n";
  BOOST_TEST(run_lbt(train + notes.string() + " --quiet").code == 0);
}

// One lbt scaling per study directory: a second one's runs would --overwrite the first's while
// they train. Held here by a flock of this process, as a running study holds it.
BOOST_AUTO_TEST_CASE(a_study_directory_in_use_is_refused) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const fs::path study = scratch() / "busy_study";
  fs::create_directories(study);
  const int fd = ::open((study / "scaling.lock").c_str(), O_RDWR | O_CREAT, 0644);
  BOOST_REQUIRE(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const std::string command =
      "scaling --config " + cfg.string() + " -w 1 --steps 5 --repeats 1 --out " + study.string();
  expect_refusal(run_lbt(command), 2, {"study directory " + study.string() + " is in use"});
  BOOST_TEST(!fs::exists(study / "workers-1"));
  ::close(fd);
  const Result one = run_lbt(command);
  BOOST_TEST(one.code == 0);
  // One repeat measures no spread: medians alone (it printed "1.000 [1.000-1.000]").
  BOOST_TEST(one.out.find("one run each (--repeats 1 measures no spread") != std::string::npos,
             one.out);
  BOOST_TEST(one.out.find("[1.000-1.000]") == std::string::npos, one.out);
}
