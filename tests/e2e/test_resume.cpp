// Kill tests: SIGKILL a training run at random points (during steps, during
// checkpoint writes), resume it, and require the final parameters and optimizer state to equal
// an uninterrupted run's bit for bit, every logged metric after the resume point to equal the
// uninterrupted run's, and no temp file or torn line to be left behind. With 1 and 2 ranks.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/processes.hpp"
#include "trainer/checkpoint.hpp"

namespace fs = std::filesystem;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

const std::string kTrain =
    std::string(LBT_BINARY) + " train --config " + LBT_SOURCE_DIR +
    "/experiments/configs/fmnist_mlp.toml --set data.train_limit=4000"
    " --set data.validation_size=1000 --set model.spec=mlp:784-32-10 --set train.global_batch=64"
    " --set train.steps=300 --set train.eval_every=25 --set train.log_every=5"
    " --set train.checkpoint_every=15 --set train.threads=1 --quiet";

std::string launcher(int ranks) {
  return ranks == 1 ? ""
                    : std::string(MPIEXEC) + " --oversubscribe -np " + std::to_string(ranks) + " ";
}

// Starts `command` in its own process group; returns the group id.
pid_t start(const std::string& command) {
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    execl("/bin/sh", "sh", "-c", ("exec " + command + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// Waits for the job; true when it exited 0.
bool finish(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// metrics.jsonl / eval.jsonl lines without their timing fields.
std::vector<std::string> lines_without_timing(const fs::path& file) {
  std::vector<std::string> out;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);  // throws on a torn line
    j.erase("wall_time");
    j.erase("samples_per_s");
    out.push_back(j.dump());
  }
  return out;
}

// What a kill test runs and compares at the end.
struct Scenario {
  std::string name;
  std::string train = kTrain;  // the lbt train command without --out/--resume
  std::int64_t steps = 300;
  std::vector<std::string> sections = {"params", "optim/momentum"};  // must be saved
  std::vector<std::string> logs = {"metrics.jsonl", "eval.jsonl"};
};

void kill_and_resume_matches_uninterrupted(int ranks, int kills, std::uint64_t seed,
                                           const Scenario& scenario = {}) {
  const std::string tag = scenario.name + "_np" + std::to_string(ranks);
  const fs::path reference = scratch() / ("reference_" + tag);
  const fs::path killed = scratch() / ("killed_" + tag);
  const std::string& kTrain = scenario.train;
  BOOST_REQUIRE(finish(start(launcher(ranks) + kTrain + " --out " + reference.string())));

  std::mt19937_64 rng(seed);
  int actual_kills = 0;
  for (int attempt = 0; attempt < kills; ++attempt) {
    pid_t job = start(launcher(ranks) + kTrain + " --out " + killed.string() + " --resume auto");
    // Kill once the run is under way: after a random delay past its first checkpoint, which
    // lands inside steps or checkpoint writes alike.
    lbt::test::wait_until(
        [&] { return !lbt::trainer::list_checkpoints(killed / "checkpoints").empty(); }, 60);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 400)(rng)));
    if (kill(-job, SIGKILL) == 0) ++actual_kills;
    int status;
    waitpid(job, &status, 0);
  }
  BOOST_TEST(actual_kills > 0);
  BOOST_REQUIRE(
      finish(start(launcher(ranks) + kTrain + " --out " + killed.string() + " --resume auto")));

  const auto final_ref = lbt::trainer::checkpoint_path(reference / "checkpoints", scenario.steps);
  const auto final_killed = lbt::trainer::checkpoint_path(killed / "checkpoints", scenario.steps);
  BOOST_REQUIRE(fs::exists(final_killed));
  const auto want = lbt::trainer::read_checkpoint(final_ref);
  const auto got = lbt::trainer::read_checkpoint(final_killed);
  for (const auto& name : scenario.sections) BOOST_TEST(want.sections.count(name) == 1u, name);
  BOOST_TEST(want.sections.size() == got.sections.size());
  for (const auto& [name, bytes] : want.sections) {  // every section, not only the named ones
    BOOST_TEST_CONTEXT("section " << name) {
      BOOST_REQUIRE(got.sections.count(name) == 1u);
      BOOST_TEST((bytes == got.sections.at(name)));
    }
  }
  BOOST_TEST(want.header.at("streams") == got.header.at("streams"));
  for (const auto& log : scenario.logs) {
    BOOST_TEST_CONTEXT(log) {
      const auto want = lines_without_timing(reference / log);
      BOOST_TEST(!want.empty());
      BOOST_TEST(want == lines_without_timing(killed / log), boost::test_tools::per_element());
    }
  }
  auto summary = nlohmann::json::parse(slurp(killed / "summary.json"));
  BOOST_TEST(summary["status"].get<std::string>() != "running");
  for (const auto& entry : fs::recursive_directory_iterator(killed)) {
    BOOST_TEST(entry.path().filename().string().find(".tmp.") == std::string::npos, entry.path());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_process_killed_three_times_resumes_bit_for_bit) {
  kill_and_resume_matches_uninterrupted(1, 3, 1);
}

BOOST_AUTO_TEST_CASE(two_ranks_killed_twice_resume_bit_for_bit) {
  kill_and_resume_matches_uninterrupted(2, 2, 2);
}

BOOST_AUTO_TEST_CASE(batch_norm_statistics_and_the_noise_estimate_resume_bit_for_bit) {
  // ResNet-8's BatchNorm running statistics are not parameters and the noise estimator's EMAs
  // are not in the optimizer: both travel in the checkpoint, so the final running statistics,
  // eval metrics (which use them) and every noise.jsonl line match the uninterrupted run.
  Scenario s;
  s.name = "resnet_noise";
  s.steps = 60;
  s.train =
      std::string(LBT_BINARY) + " train --config " + LBT_SOURCE_DIR +
      "/experiments/configs/fmnist_mlp.toml --set model.spec=resnet:8"
      " --set data.train_limit=2000 --set data.validation_size=200 --set train.global_batch=32"
      " --set train.accum_steps=2 --set train.steps=60 --set train.eval_every=20"
      " --set train.log_every=5 --set train.checkpoint_every=6 --set train.threads=1"
      " --set noise.enabled=true --set noise.every=3 --set noise.estimator=\"two_batch\" --quiet";
  s.sections = {"params", "optim/momentum", "layer_buffer/0", "layer_buffer/1", "noise"};
  s.logs = {"metrics.jsonl", "eval.jsonl", "noise.jsonl"};
  kill_and_resume_matches_uninterrupted(1, 2, 3, s);
}

BOOST_AUTO_TEST_CASE(resume_refuses_a_changed_config_naming_the_key) {
  const fs::path run = scratch() / "changed";
  BOOST_REQUIRE(finish(start(kTrain + " --set train.steps=60 --out " + run.string())));
  auto r = lbt::test::run_lbt("train --resume " + run.string() +
                              " --set optimizer.lr=0.5 --set train.threads=2 --quiet");  // both
  BOOST_TEST(r.code != 0);
  BOOST_TEST(r.err.find("optimizer.lr") != std::string::npos, r.err);
  // No run directory, a file inside one, a config.toml emptied or made a directory: each named (the
  // hints were "presets live in experiments/configs/", "train.global_batch differs ...").
  auto none = lbt::test::run_lbt("train --resume " + (scratch() / "nothing").string() + " --quiet");
  BOOST_TEST(none.err.find("no run directory there") != std::string::npos, none.err);
  auto file = lbt::test::run_lbt("train --resume " + (run / "config.toml").string() + " --quiet");
  BOOST_TEST(file.err.find("no run directory there") != std::string::npos, file.err);
  std::ofstream(run / "config.toml", std::ios::trunc);
  auto emptied = lbt::test::run_lbt("train --resume " + run.string() + " --quiet");
  BOOST_TEST(emptied.err.find("config.toml is empty") != std::string::npos, emptied.err);
  BOOST_REQUIRE((fs::remove(run / "config.toml") && fs::create_directory(run / "config.toml")));
  auto folder = lbt::test::run_lbt("train --resume " + run.string() + " --quiet");
  BOOST_TEST(folder.err.find("config.toml is not a regular file") != std::string::npos, folder.err);
  BOOST_TEST((none.code == 2 && file.code == 2 && emptied.code == 2 && folder.code == 2));
}

// Two runs whose checkpoints/ link to one directory elsewhere (on a larger disk, say) would prune
// each other's checkpoints and resume from them: a resume through the link is refused naming it,
// --check too, and the files there are left as they were.
BOOST_AUTO_TEST_CASE(a_resume_through_a_linked_checkpoints_directory_is_refused) {
  const fs::path run = scratch() / "linked", elsewhere = scratch() / "elsewhere_checkpoints";
  fs::remove_all(run);
  fs::remove_all(elsewhere);
  BOOST_REQUIRE(finish(start(kTrain + " --set train.steps=60 --out " + run.string())));
  fs::rename(run / "checkpoints", elsewhere);
  fs::create_directory_symlink(elsewhere, run / "checkpoints");
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(elsewhere))
    before[e.path().filename().string()] = slurp(e.path());
  BOOST_TEST_REQUIRE(before.size() >= 2u);
  for (const char* check : {"", " --check"}) {
    const auto r = lbt::test::run_lbt("train --resume " + run.string() + " --quiet" + check);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(lbt::test::error_line(r.err) ==
                   "error: " + (run / "checkpoints").string() +
                       " is a symbolic link: lbt prunes and resumes from the checkpoints it finds "
                       "there, so a directory another run's link shares would mix the two runs",
               r.err);
  }
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(elsewhere))
    after[e.path().filename().string()] = slurp(e.path());
  BOOST_TEST((after == before));
}

// Two near misses of --resume RUN_DIR get a hint that fits: the run's checkpoints/ itself names
// the run's directory; a sweep's directory says to rerun the sweep (both said "use --resume
// auto", which then refused the sweep's directory).
BOOST_AUTO_TEST_CASE(resuming_a_checkpoints_folder_or_a_sweep_directory_names_the_fix) {
  const fs::path run = scratch() / "near_miss", sweep = scratch() / "near_miss_sweep";
  fs::remove_all(run);
  BOOST_REQUIRE(finish(start(kTrain + " --set train.steps=30 --out " + run.string())));
  auto r = lbt::test::run_lbt("train --resume " + (run / "checkpoints").string() + " --quiet");
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(
      r.err.find("hint: give the run's directory: --resume " + run.string()) != std::string::npos,
      r.err);
  fs::create_directories(sweep);
  std::ofstream(sweep / "sweep.json") << "{}";
  r = lbt::test::run_lbt("train --resume " + sweep.string() + " --quiet");
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find(": not a run's directory (a sweep's)") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("hint: rerun its lbt sweep command") != std::string::npos, r.err);
  // The same with the config given (it passed the config.toml check and met the checkpoints').
  r = lbt::test::run_lbt("train --resume " + sweep.string() + " --config " +
                         (run / "config.toml").string() + " --quiet");
  BOOST_TEST(r.err.find(": not a run's directory (a sweep's)") != std::string::npos, r.err);
}

// A checkpoint whose header was edited and its checksum recomputed (or another program's): a
// field of another type than lbt writes (or a step of -5, which crashed the resume) is one error
// naming the file, exit 3, for --resume and --check; nlohmann's bare line named no file.
BOOST_AUTO_TEST_CASE(a_checkpoint_header_of_other_types_is_refused_naming_the_file) {
  const fs::path run = scratch() / "edited_header";
  fs::remove_all(run);
  BOOST_REQUIRE(finish(start(kTrain + " --set train.steps=60 --out " + run.string())));
  const fs::path newest = lbt::trainer::list_checkpoints(run / "checkpoints").back();
  const auto ck = lbt::trainer::read_checkpoint(newest);
  std::vector<lbt::trainer::CheckpointSection> sections;
  for (const auto& [name, bytes] : ck.sections) sections.push_back({name, bytes});
  // --check reads the saved config alone; a resume reads every field.
  for (const auto& [key, check] :
       {std::pair{"config", " --check"}, std::pair{"config", ""}, std::pair{"global_batch", ""},
        std::pair{"streams", ""}, std::pair{"step", ""}}) {
    nlohmann::json header = ck.header;
    header[key] = std::string(key) == "config" ? nlohmann::json(7) : nlohmann::json("x");
    if (std::string(key) == "step") header[key] = -5;
    lbt::trainer::write_checkpoint(newest, header, sections);
    const auto r = lbt::test::run_lbt("train --resume " + run.string() + " --quiet" + check);
    BOOST_TEST_CONTEXT(key << check) {
      BOOST_TEST(r.code == 3, r.err);
      const std::string says = newest.string() + ": its header does not hold what lbt writes";
      BOOST_TEST(lbt::test::error_line(r.err).find(says) != std::string::npos, r.err);
    }
  }
}

// The config names the data's path, not its contents: a run resumed after its files were
// regenerated would train on two datasets in one run. A checkpoint records each file's size and
// fingerprint; a resume on a changed file is refused naming its key (exit 3), and resumes again
// once the file is restored.
BOOST_AUTO_TEST_CASE(a_resume_on_data_changed_since_the_checkpoint_is_refused) {
  const fs::path data = scratch() / "fmnist_copy", run = scratch() / "changed_data";
  fs::remove_all(data);
  fs::remove_all(run);
  fs::copy("/usr/share/datasets/fashion-mnist", data);
  const std::string set_path = " --set data.path=" + data.string();
  BOOST_REQUIRE(finish(start(kTrain + set_path + " --set train.steps=60 --out " + run.string())));
  const fs::path labels = data / "train-labels-idx1-ubyte.gz";
  fs::copy_file(labels, scratch() / "labels.gz", fs::copy_options::overwrite_existing);
  // Another label for example 92: the same size unzipped, other contents.
  const std::string edit = "cd " + data.string() +
                           " && gunzip -c train-labels-idx1-ubyte.gz > l && printf '\\011' | "
                           "dd of=l bs=1 seek=100 conv=notrunc 2>/dev/null && gzip -c l > "
                           "train-labels-idx1-ubyte.gz && rm l";
  BOOST_REQUIRE(std::system(edit.c_str()) == 0);
  const std::string resume = "train --resume " + run.string() + " --quiet";
  auto r = lbt::test::run_lbt(resume);
  BOOST_TEST(r.code == 3, r.err);
  const std::string changed =
      ": data.path's file " + labels.string() + " changed since the checkpoint (" +
      std::to_string(fs::file_size(scratch() / "labels.gz")) + " bytes then, " +
      std::to_string(fs::file_size(labels)) + " bytes now)";
  BOOST_TEST(lbt::test::error_line(r.err) == "error: cannot resume " + run.string() + changed,
             r.err);
  // A branch from its checkpoint (lbt cbs's) trains on the reference's data as well.
  const fs::path checkpoint = lbt::trainer::list_checkpoints(run / "checkpoints").front();
  r = lbt::test::run_lbt("train --config " + (run / "config.toml").string() +
                         " --set train.branch_from=" + checkpoint.string() +
                         " --set train.global_batch=128 --set train.steps=70 --quiet --out " +
                         (scratch() / "changed_data_branch").string());
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(
      lbt::test::error_line(r.err) == "error: cannot branch from " + checkpoint.string() + changed,
      r.err);
  fs::copy_file(scratch() / "labels.gz", labels, fs::copy_options::overwrite_existing);
  r = lbt::test::run_lbt(resume);
  BOOST_TEST(r.code == 0, r.err);
  // The same data moved: the resume names its new path, and its contents are what is compared
  // (until 2026-11-29 the path was, and a run whose data had moved could not be resumed).
  const fs::path moved = scratch() / "fmnist_moved";
  fs::remove_all(moved);
  fs::rename(data, moved);
  r = lbt::test::run_lbt(resume + " --set data.path=" + moved.string());
  BOOST_TEST(r.code == 0, r.err);
}

// A run that fails mid-way (here its checkpoint is larger than the process may write: ulimit -f,
// with SIGXFSZ ignored so that write() fails as on a full disk) keeps what it wrote and records
// the error; how far it got is unknown to the summary (null), never the blank outcome's 0 steps,
// 0 s and "nan" loss it wrote before.
BOOST_AUTO_TEST_CASE(a_run_that_fails_mid_way_records_the_error_and_no_made_up_figures) {
  const fs::path run = scratch() / "file_too_large";
  fs::remove_all(run);
  const auto r = lbt::test::run_command("trap '' XFSZ; ulimit -f 200; " + kTrain +
                                        " --set train.steps=60 --out " + run.string());
  BOOST_TEST(r.code == 1, r.err);
  BOOST_TEST(lbt::test::error_line(r.err).find("cannot write checkpoint") != std::string::npos,
             r.err);
  BOOST_TEST(r.err.find("\nhint: the file passed this process's file size limit: raise it "
                        "(ulimit -f unlimited)") != std::string::npos,
             r.err);  // not "check free disk space"
  const auto s = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(s["status"] == "failed");
  BOOST_TEST(s["error"].get<std::string>().find("cannot write checkpoint") != std::string::npos);
  for (const char* unknown : {"steps", "examples", "last_loss", "wall_time_s", "samples_per_s"})
    BOOST_TEST(s[unknown].is_null(), unknown << ": " << s[unknown].dump());
  BOOST_TEST(s["total_steps"] == 60);
  BOOST_TEST(slurp(run / "metrics.jsonl").find("\"step\":15") != std::string::npos);
  BOOST_TEST(!fs::exists(run / "checkpoints" / "step_0000000015.ckpt"));
}

// One writer per run directory (experiments/run_lock.hpp): while a run trains, a second
// `--resume` of it, an `--overwrite` of it and a `--resume auto` into it are refused naming the
// live run. Before the lock the resume rewrote metrics.jsonl under the running one, whose later
// lines went to the unlinked file: 843 of 8000 lines were left.
BOOST_AUTO_TEST_CASE(a_run_that_is_training_keeps_its_directory) {
  const fs::path run = scratch() / "busy";
  fs::remove_all(run);
  const std::string config = std::string(LBT_SOURCE_DIR) +
                             "/experiments/configs/synthetic_regression.toml --set train.steps=" +
                             "5000000 --set train.checkpoint_every=5000 --set noise.enabled=false" +
                             " --set train.threads=1";
  const pid_t first = start(std::string(LBT_BINARY) + " train --quiet --config " + config +
                            " --out " + run.string());
  // Stopped however this case ends (a failed check included), so no run outlives the test.
  struct StopAtEnd {
    pid_t pid;
    ~StopAtEnd() {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } stop_first{first};
  BOOST_REQUIRE(lbt::test::wait_until(
      [&] { return fs::exists(run / "checkpoints") && !fs::is_empty(run / "checkpoints"); }, 120,
      std::chrono::milliseconds(50)));
  for (const std::string& second :
       {"train --quiet --resume " + run.string(),
        "train --quiet --config " + config + " --out " + run.string() + " --overwrite",
        "train --quiet --config " + config + " --out " + run.string() + " --resume auto"}) {
    for (const char* check : {"", " --check"}) {  // --check finds it too, read only
      BOOST_TEST_CONTEXT(second + check) {
        const auto r = lbt::test::run_lbt(second + check);
        BOOST_TEST(r.code == 2, r.err);
        BOOST_TEST(r.err.find("run directory " + run.string() + " is in use by lbt train (pid " +
                              std::to_string(first)) != std::string::npos,
                   r.err);
      }
    }
  }
  kill(first, SIGTERM);  // saves a checkpoint and exits 143
  finish(first);
  stop_first.pid = 0;  // waited for: its pid may be another process's now
  // Every line the first run logged is there, in order, each log_every (50) steps apart.
  std::int64_t previous = 0;
  const auto lines = lines_without_timing(run / "metrics.jsonl");
  BOOST_TEST_REQUIRE(lines.size() > 10u);
  for (const std::string& line : lines) {
    const auto step = nlohmann::json::parse(line)["step"].get<std::int64_t>();
    BOOST_TEST_REQUIRE(step == previous + 50);
    previous = step;
  }
  // The run has ended: its lock went with it, and a resume starts (stopped again at once).
  const pid_t resumed = start(std::string(LBT_BINARY) + " train --quiet --resume " + run.string());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  kill(resumed, SIGTERM);
  int status = 0;
  waitpid(resumed, &status, 0);
  BOOST_TEST(!(WIFEXITED(status) && WEXITSTATUS(status) == 2), "the resume was refused");
}
