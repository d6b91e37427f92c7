// Misuse a new user would try, through the real `lbt` binary: each case failed on
// main 38e797a (mixed runs, silent changes, hangs) and must now end with a clear outcome.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/processes.hpp"
#include "trainer/checkpoint.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using lbt::test::start_lbt;
using lbt::test::wait_for;

namespace {

// A run of a few hundred milliseconds: linear regression on 4096 synthetic examples.
fs::path tiny_config() {
  const fs::path p = scratch() / "tiny.toml";
  if (!fs::exists(p)) {
    std::ofstream(p) << "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
                     << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 512\n"
                     << "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
                     << "[train]\nglobal_batch = 32\nsteps = 40\neval_every = 10\nlog_every = 5\n"
                     << "threads = 1\n"
                     << "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n";
  }
  return p;
}

std::string train(const std::string& extra) {
  return "train --config " + tiny_config().string() + " --quiet " + extra;
}

std::set<std::string> checkpoint_names(const fs::path& run) {
  std::set<std::string> names;
  for (const auto& p : lbt::trainer::list_checkpoints(run / "checkpoints"))
    names.insert(p.filename());
  return names;
}

nlohmann::json summary(const fs::path& run) {
  return nlohmann::json::parse(slurp(run / "summary.json"));
}

}  // namespace

// --overwrite replaces the old run as a whole, its checkpoints too (a later --resume must not
// continue the old state).
BOOST_AUTO_TEST_CASE(overwrite_replaces_the_old_run_with_its_checkpoints) {
  const fs::path run = scratch() / "overwritten";
  auto r = run_lbt(train("--set train.checkpoint_every=10 --set train.checkpoint_keep=10 --out " +
                         run.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_REQUIRE_EQUAL(checkpoint_names(run).size(), 4u);  // steps 10, 20, 30, 40
  r = run_lbt(train("--set train.checkpoint_every=25 --set train.checkpoint_keep=10 --out " +
                    run.string()));
  BOOST_TEST(r.code == 2);  // no --overwrite: refused
  r =
      run_lbt(train("--set train.checkpoint_every=25 --set train.checkpoint_keep=10 --overwrite "
                    "--out " +
                    run.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  // Only the new run's checkpoints (step 25 and the final one), each with the new config.
  const std::set<std::string> want = {lbt::trainer::checkpoint_path("", 25).filename(),
                                      lbt::trainer::checkpoint_path("", 40).filename()};
  BOOST_TEST((checkpoint_names(run) == want));
  for (const auto& p : lbt::trainer::list_checkpoints(run / "checkpoints")) {
    const auto header = lbt::trainer::read_checkpoint(p).header;
    BOOST_TEST(header.at("config").get<std::string>().find("checkpoint_every = 25") !=
               std::string::npos);
  }
  // Nothing of the old run is left beside the directory either.
  for (const auto& e : fs::directory_iterator(scratch())) {
    BOOST_TEST(e.path().filename().string().find("overwritten.replaced") == std::string::npos);
  }
  // A directory that holds other files is not deleted by --overwrite.
  std::ofstream(run / "notes.txt") << "mine\n";
  r = run_lbt(train("--overwrite --out " + run.string()));
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("notes.txt") != std::string::npos, r.err);
  BOOST_TEST(fs::exists(run / "notes.txt"));
}

// Files named as a run's outputs that lbt did not write (no summary.json of a run's): a run
// refuses to write over them, with or without --overwrite, and they stay as they were. On
// 2026-11-28 a user's eval.jsonl and metrics.jsonl were overwritten (exit 0), and a lone
// config.toml was called "a run" whose hint, --overwrite, deleted it. A run's own directory
// with the log a sweep keeps beside its trial (train.log) still starts.
BOOST_AUTO_TEST_CASE(a_run_never_writes_over_or_deletes_run_named_files_lbt_did_not_write) {
  for (const char* name : {"eval.jsonl", "metrics.jsonl", "config.toml", "noise.png"}) {
    const fs::path dir = scratch() / ("mine_" + std::string(name));
    fs::create_directories(dir);
    std::ofstream(dir / name) << "mine\n";
    for (const char* overwrite : {"", "--overwrite "}) {
      const auto r = run_lbt(train(std::string(overwrite) + "--out " + dir.string()));
      BOOST_TEST(r.code == 2, name << " " << overwrite << r.err);
      BOOST_TEST(
          r.err.find("holds " + std::string(name) + " but no run of lbt's") != std::string::npos,
          r.err);
      BOOST_TEST(slurp(dir / name) == "mine\n");
      BOOST_TEST(!fs::exists(dir / "summary.json"));
    }
  }
  const fs::path logged = scratch() / "with_a_sweep_log";
  fs::create_directories(logged);
  std::ofstream(logged / "train.log") << "the sweep's log\n";
  const auto r = run_lbt(train("--out " + logged.string()));
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(summary(logged)["status"] == "completed");
}

namespace {

std::size_t line_count(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// A run of some seconds, so a signal lands mid-way.
const std::string kLong =
    "--set train.steps=20000 --set train.eval_every=2500 --set train.log_every=1 "
    "--set data.synthetic.examples=16384 --set model.spec=linear:16-1";

void interrupt_then_resume_matches_uninterrupted(int signal, int want_code) {
  const std::string tag = std::to_string(signal);
  const fs::path reference = scratch() / ("sig_reference_" + tag);
  const fs::path run = scratch() / ("sig_run_" + tag);
  auto r = run_lbt(train(kLong + " --out " + reference.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);

  const fs::path log = scratch() / ("sig_" + tag + ".log");
  const pid_t pid = start_lbt(train(kLong + " --out " + run.string()), log);
  lbt::test::wait_until([&] { return line_count(run / "metrics.jsonl") >= 20; }, 30,
                        std::chrono::milliseconds(2));
  kill(pid, signal);
  const int status = wait_for(pid, 30);
  BOOST_TEST_INFO("log: " << slurp(log));
  BOOST_REQUIRE(status != -1);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == want_code);
  const auto s = summary(run);
  BOOST_TEST(s["status"].get<std::string>() == "interrupted");
  const std::int64_t stopped = s["steps"].get<std::int64_t>();
  BOOST_TEST(stopped < 20000);
  BOOST_TEST(fs::exists(lbt::trainer::checkpoint_path(run / "checkpoints", stopped)));
  BOOST_TEST(slurp(log).find("--resume " + run.string()) != std::string::npos);

  r = run_lbt("train --resume " + run.string() + " --quiet");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(summary(run)["status"].get<std::string>() == "completed");
  // The logs' wall_time goes on from the time before the resume (it restarted at 0).
  double wall = 0.0;
  std::ifstream metrics(run / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const double t = nlohmann::json::parse(line)["wall_time"].get<double>();
    BOOST_TEST(t >= wall, line);
    wall = t;
  }
  const auto want = lbt::trainer::read_checkpoint(
      lbt::trainer::checkpoint_path(reference / "checkpoints", 20000));
  const auto got =
      lbt::trainer::read_checkpoint(lbt::trainer::checkpoint_path(run / "checkpoints", 20000));
  BOOST_TEST(want.sections.size() == got.sections.size());
  for (const auto& [name, bytes] : want.sections) {
    BOOST_TEST_CONTEXT("section " << name) {
      BOOST_REQUIRE(got.sections.count(name) == 1u);
      BOOST_TEST((bytes == got.sections.at(name)));
    }
  }
}

}  // namespace

// Ctrl-C finishes the step, checkpoints and records the run as interrupted (never a summary
// saying "running" with no checkpoint).
BOOST_AUTO_TEST_CASE(sigint_finishes_the_step_checkpoints_exits_130_and_resumes_bit_for_bit) {
  interrupt_then_resume_matches_uninterrupted(SIGINT, 130);
}

BOOST_AUTO_TEST_CASE(sigterm_does_the_same_and_exits_143) {
  interrupt_then_resume_matches_uninterrupted(SIGTERM, 143);
}

// A run that diverged before its first evaluation has no validation metrics: null, not 0.
BOOST_AUTO_TEST_CASE(metrics_never_measured_are_null_in_summary_json) {
  const fs::path run = scratch() / "diverged_early";
  auto r =
      run_lbt(train("--set optimizer.lr=1e6 --set train.eval_every=1000 --out " + run.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto s = summary(run);
  BOOST_REQUIRE_EQUAL(s["status"].get<std::string>(), "diverged");
  for (const char* key :
       {"best_val_accuracy", "best_val_loss", "final_val_accuracy", "final_val_loss"}) {
    BOOST_TEST(s[key].is_null(), key << " = " << s[key].dump());
  }
  // A regression's metrics, unmeasured: it printed "best val_accuracy: -" (2026-11-29 audit).
  BOOST_TEST(r.out.find("final val_mse: -") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("val_accuracy") == std::string::npos, r.out);
}

// Resuming with other train.threads is refused: it would not be bit-exact.
BOOST_AUTO_TEST_CASE(resume_with_other_threads_is_refused_naming_the_key) {
  const fs::path run = scratch() / "threads";
  auto r = run_lbt(train("--out " + run.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_lbt("train --resume " + run.string() + " --set train.threads=2 --quiet");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("train.threads") != std::string::npos, r.err);
  r = run_lbt("train --resume " + run.string() + " --set train.log_every=7 --quiet");
  BOOST_TEST(r.code == 0, r.err);  // a key that changes no value may still change
}

// --resume auto where every checkpoint is damaged: refused as --resume RUN is, the run left as
// it was (it started fresh and replaced the logs and the checkpoints; 2026-11-29 audit).
BOOST_AUTO_TEST_CASE(resume_auto_keeps_a_run_whose_checkpoints_are_all_damaged) {
  const fs::path run = scratch() / "all_damaged";
  BOOST_TEST_REQUIRE(run_lbt(train("--out " + run.string())).code == 0);
  for (const fs::path& ckpt : lbt::trainer::list_checkpoints(run / "checkpoints"))
    std::fstream(ckpt, std::ios::in | std::ios::out | std::ios::binary).seekp(100).put('X');
  const std::string metrics = slurp(run / "metrics.jsonl");
  const auto r = run_lbt(train("--out " + run.string() + " --resume auto"));
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("holds no intact checkpoint") != std::string::npos, r.err);
  BOOST_TEST(slurp(run / "metrics.jsonl") == metrics);
  BOOST_TEST(!checkpoint_names(run).empty());
}

// 11. By default a run wrote no checkpoint until it ended; now one every
//     train.checkpoint_every_seconds (default 300) as well.
BOOST_AUTO_TEST_CASE(checkpoints_are_written_by_wall_time_by_default) {
  const auto help = run_lbt("train --help");
  BOOST_TEST(help.out.find("checkpoint_every_seconds = 300.0") != std::string::npos, help.out);
  const fs::path run = scratch() / "timed";
  auto r = run_lbt(train(kLong +
                         " --set train.checkpoint_every_seconds=0.02"
                         " --set train.checkpoint_keep=1000 --out " +
                         run.string()));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto names = checkpoint_names(run);
  BOOST_TEST(names.size() >= 3u, names.size()
                                     << " checkpoints");  // some by time, and the final one
  BOOST_TEST(names.count(lbt::trainer::checkpoint_path("", 20000).filename()) == 1u);
}

// Ranks started with different configs (another train.steps would deadlock, another LR train
// silently): every rank stops within seconds, naming the key.
BOOST_AUTO_TEST_CASE(ranks_with_different_configs_stop_naming_the_key_and_never_hang) {
  const std::string mpirun = std::string(MPIEXEC) + " --oversubscribe ";
  const std::string base = std::string(LBT_BINARY) + " " + train("--set train.steps=40");
  for (const std::string key : {"train.steps=20", "optimizer.lr=0.2"}) {
    BOOST_TEST_CONTEXT(key) {
      const fs::path out = scratch() / ("mpmd_" + key.substr(0, key.find('=')));
      const fs::path log = scratch() / "mpmd.log";
      const std::string cmd = mpirun + "-np 1 " + base + " --out " + out.string() + " : -np 1 " +
                              base + " --out " + out.string() + " --set " + key;
      const pid_t pid = fork();
      if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >" + log.string() + " 2>&1").c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
      }
      setpgid(pid, pid);
      const auto t0 = std::chrono::steady_clock::now();
      const int status = wait_for(pid, 60);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::string text = slurp(log);
      BOOST_TEST_INFO("log: " << text);
      BOOST_REQUIRE_MESSAGE(status != -1, "the job hung (killed after 60 s)");
      BOOST_TEST(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
      BOOST_TEST(seconds < 30.0);
      BOOST_TEST(text.find(key.substr(0, key.find('='))) != std::string::npos);
      BOOST_TEST(text.find("different configs") != std::string::npos);
    }
  }
}

// A directory given as a data file is a one-line error naming the key, not a raw system error
// ("filesystem error: cannot get file size: Is a directory").
BOOST_AUTO_TEST_CASE(a_directory_given_as_a_data_file_is_a_one_line_error_naming_the_key) {
  const fs::path dir = scratch() / "a_directory";
  fs::create_directories(dir);
  const fs::path cfg = scratch() / "npy_dir.toml";
  std::ofstream(cfg) << "[model]\nspec = \"linear:4-2\"\n[data]\nformat = \"npy\"\n"
                     << "train_features = \"" << dir.string() << "\"\ntrain_labels = \""
                     << dir.string()
                     << "\"\nvalidation_size = 2\n[train]\nglobal_batch = 2\nsteps = 1\n";
  auto r = run_lbt("train --config " + cfg.string() + " --quiet --out " +
                   (scratch() / "npy_dir").string());
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(r.err.find("error: data.train_features = " + dir.string() + " is a directory") == 0u,
             r.err);
  BOOST_TEST(r.err.find("hint: set data.train_features to the file itself") != std::string::npos,
             r.err);
  BOOST_TEST(r.err.find("filesystem error") == std::string::npos, r.err);
}

namespace {

// A tiny IDX dataset (4x4 "images", 10 classes) in `dir`: 256 training and 64 test examples.
void write_tiny_idx(const fs::path& dir) {
  fs::create_directories(dir);
  auto write = [&](const std::string& name, std::uint32_t magic, std::vector<std::uint32_t> dims,
                   std::size_t n, unsigned seed) {
    std::ofstream out(dir / name, std::ios::binary);
    auto be32 = [&](std::uint32_t v) {
      const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
      out.write(b, 4);
    };
    be32(magic);
    for (auto d : dims) be32(d);
    for (std::size_t i = 0; i < n; ++i)
      out.put(char((i * 37 + seed) % (magic == 0x801 ? 10 : 256)));
  };
  write("train-images-idx3-ubyte", 0x803, {256, 4, 4}, 256 * 16, 1);
  write("train-labels-idx1-ubyte", 0x801, {256}, 256, 2);
  write("t10k-images-idx3-ubyte", 0x803, {64, 4, 4}, 64 * 16, 3);
  write("t10k-labels-idx1-ubyte", 0x801, {64}, 64, 4);
}

// `mpirun -np 1 lbt train ... : -np 1 lbt train ... --set data.path=OTHER`; returns the exit
// status (-1: hung, killed after 60 s), the seconds it took and its output.
int run_mpmd_with_data(const fs::path& data, const fs::path& other, const fs::path& out,
                       double& seconds, std::string& text) {
  const fs::path cfg = scratch() / "tiny_idx.toml";
  std::ofstream(cfg) << "[model]\nspec = \"logistic:16-10\"\n[data]\ndataset = \"tiny\"\n"
                     << "format = \"idx\"\npath = \"" << data.string() << "\"\n"
                     << "validation_size = 64\n[train]\nglobal_batch = 16\nsteps = 20\n"
                     << "eval_every = 10\nthreads = 1\n";
  const std::string base = std::string(LBT_BINARY) + " train --quiet --config " + cfg.string() +
                           " --out " + out.string();
  const fs::path log = scratch() / "mpmd_data.log";
  const std::string cmd = std::string(MPIEXEC) + " --oversubscribe -np 1 " + base + " : -np 1 " +
                          base + " --set data.path=" + other.string();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >" + log.string() + " 2>&1").c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = wait_for(pid, 60);
  seconds = lbt::test::seconds_since(t0);
  text = slurp(log);
  return status;
}

}  // namespace

// 12. Ranks reading different data (a stale copy on one host) trained silently apart; and an
//     identical copy at another path was refused as a "different config". Now the contents
//     are compared, not the paths.
BOOST_AUTO_TEST_CASE(ranks_compare_their_data_files_contents_not_paths) {
  const fs::path data = scratch() / "idx_a", copy = scratch() / "idx_b",
                 stale = scratch() / "idx_c";
  write_tiny_idx(data);
  fs::copy(data, copy);
  fs::copy(data, stale);
  {  // one label changed in the stale copy, same size
    std::fstream f(stale / "train-labels-idx1-ubyte",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 100);
    f.put(char(9));
  }
  double seconds = 0;
  std::string text;
  int status = run_mpmd_with_data(data, copy, scratch() / "mpmd_copy", seconds, text);
  BOOST_TEST_INFO("log: " << text);
  BOOST_TEST((status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0));

  status = run_mpmd_with_data(data, stale, scratch() / "mpmd_stale", seconds, text);
  BOOST_TEST_INFO("log: " << text);
  BOOST_REQUIRE_MESSAGE(status != -1, "the job hung (killed after 60 s)");
  BOOST_TEST(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_TEST(seconds < 30.0);
  BOOST_TEST(text.find("different data") != std::string::npos);
  BOOST_TEST(text.find((stale / "train-labels-idx1-ubyte").string()) != std::string::npos);
  BOOST_TEST(text.find("hint: give every rank the same data files") != std::string::npos);
}
