// Careless and hostile input through the real `lbt` binary: a sweep's files cut short
// or edited (best.csv, sweep.csv, sweep.json) fail naming the file and the fix instead of
// falling back silently; `lbt plan --out` never replaces a file it did not write; `lbt memory`
// refuses sizes past 64 bits; a layer too large for the machine is refused, named, before any
// allocation; a validation split too large gets a size that fits. Exit codes as the README
// lists them: 2 config, 3 data.
#define BOOST_TEST_MODULE careless_input
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using lbt::test::error_line;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using Result = lbt::test::CliResult;

namespace {

// A real sweep (8 trials of a few hundred steps on synthetic regression, about a second),
// made once; tests damage copies of it.
const fs::path& real_sweep() {
  static const fs::path dir = [] {
    const fs::path cfg = scratch() / "sweep.toml";
    std::ofstream(cfg) << "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
                       << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 1024\n"
                       << "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
                       << "[train]\ntarget = \"val_loss<=0.3\"\nlog_every = 50\n"
                       << "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.0\n"
                       << "[schedule]\nscaling = \"sqrt\"\nreference_batch = 32\n"
                       << "[sweep]\nbatch_sizes = [8, 32, 128, 512]\nlr_multipliers = [0.5, 2.0]\n"
                       << "max_steps = 400\neval_every_examples = 64\nlr_search = \"grid\"\n";
    const fs::path out = scratch() / "sweep";
    const Result r = run_lbt("sweep --config " + cfg.string() +
                             " --jobs 2 --no-plots --quiet --out " + out.string());
    BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
    return out;
  }();
  return dir;
}

// A copy of the real sweep named `name`.
fs::path sweep_copy(const std::string& name) {
  const fs::path dir = scratch() / name;
  fs::remove_all(dir);
  fs::copy(real_sweep(), dir, fs::copy_options::recursive);
  return dir;
}

// Keeps the first `bytes` bytes of `file`.
void cut(const fs::path& file, std::size_t bytes) {
  const std::string text = slurp(file);
  BOOST_REQUIRE(bytes < text.size());
  std::ofstream(file, std::ios::trunc) << text.substr(0, bytes);
}

// The offset just past the `n`th newline of `file`.
std::size_t after_line(const fs::path& file, int n) {
  const std::string text = slurp(file);
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) at = text.find('\n', at) + 1;
  return at;
}

// Exit `code` with one error line holding every one of `words`, and a hint line.
void expect_refusal(const Result& r, int code, std::initializer_list<std::string> words) {
  BOOST_TEST(r.code == code, r.err);
  const std::string line = error_line(r.err);
  for (const std::string& w : words) BOOST_TEST(line.find(w) != std::string::npos, line);
  BOOST_TEST(r.err.find("\nhint: ") != std::string::npos, r.err);
}

Result plan(const fs::path& dir, const std::string& more = "") {
  return run_lbt("plan --from " + dir.string() + " --max-steps 200 --resamples 50 " + more);
}

}  // namespace

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

BOOST_AUTO_TEST_CASE(a_batch_given_twice_gets_one_column) {
  const fs::path cfg = scratch() / "sweep.toml";
  (void)real_sweep();  // writes the config
  const Result csv = run_lbt("schedule --config " + cfg.string() + " -b 64,32,64 --steps 2");
  BOOST_REQUIRE_MESSAGE(csv.code == 0, csv.err);
  BOOST_TEST(csv.out.substr(0, csv.out.find('\n')) == "step,lr_B64,lr_B32", csv.out);
  const Result table = run_lbt("memory --config " + cfg.string() + " -b 64,64");
  BOOST_REQUIRE_MESSAGE(table.code == 0, table.err);
  BOOST_TEST(table.out.find("64 / 64") == table.out.rfind("64 / 64"), table.out);
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
  // A plot under a file: refused in one line before any work (it was Python's traceback after
  // the work, and a hint that blamed matplotlib); a plot under new directories makes them.
  std::ofstream(dir / "a_file") << "not a directory\n";
  expect_refusal(run_lbt(run + (dir / "a_file" / "lr.png").string()), 1,
                 {"cannot create the plot's directory", "Not a directory"});
  BOOST_TEST(run_lbt(run + (dir / "new" / "lr.png").string()).err.find("Traceback") ==
             std::string::npos);
  BOOST_TEST(slurp(dir / "new" / "lr.csv").starts_with("step,lr\n"));

  Result r = run_lbt(run + (dir / "mine.png").string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_lbt(run + (dir / "mine.png").string());  // its own data: replaced
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(slurp(dir / "mine.csv").starts_with("step,lr\n"));
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

// An output path under a file (a typo of --out) is one error line with a hint naming the path
// for every command that writes a directory or file; lbt scaling and lbt cbs printed
// std::filesystem's "filesystem error: cannot create directories: ..." without a hint, lbt
// plan named its temporary file.
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
      BOOST_TEST(r.code == 1, r.err);
      BOOST_TEST(error_line(r.err).find((file / what).string()) != std::string::npos, r.err);
      BOOST_TEST(error_line(r.err).find("Not a directory") != std::string::npos, r.err);
      BOOST_TEST(r.err.find("filesystem error") == std::string::npos, r.err);
      BOOST_TEST(r.err.find("\nhint: ") != std::string::npos, r.err);
    }
  }
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
  BOOST_TEST(run_lbt(command).code == 0);
}
