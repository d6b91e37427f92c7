// Kill tests (issue 9): SIGKILL a training run at random points (during steps, during
// checkpoint writes), resume it, and require the final parameters and optimizer state to equal
// an uninterrupted run's bit for bit, every logged metric after the resume point to equal the
// uninterrupted run's, and no temp file or torn line to be left behind. With 1 and 2 ranks.
#define BOOST_TEST_MODULE resume
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "support/cli_runner.hpp"
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
    " --set train.checkpoint_every=15 --set train.threads=1"
    " --quiet";

std::string launcher(int ranks) {
  if (ranks == 1) return "";
  return std::string(MPIEXEC) + " --oversubscribe -np " + std::to_string(ranks) + " ";
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

std::vector<std::byte> section(const fs::path& ckpt, const std::string& name) {
  auto loaded = lbt::trainer::read_checkpoint(ckpt);
  return loaded.sections.at(name);
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

void kill_and_resume_matches_uninterrupted(int ranks, int kills, std::uint64_t seed) {
  const fs::path reference = scratch() / ("reference_np" + std::to_string(ranks));
  const fs::path killed = scratch() / ("killed_np" + std::to_string(ranks));
  BOOST_REQUIRE(finish(start(launcher(ranks) + kTrain + " --out " + reference.string())));

  std::mt19937_64 rng(seed);
  int actual_kills = 0;
  for (int attempt = 0; attempt < kills; ++attempt) {
    pid_t job = start(launcher(ranks) + kTrain + " --out " + killed.string() + " --resume auto");
    // Kill once the run is under way: after a random delay past its first checkpoint, which
    // lands inside steps or checkpoint writes alike.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lbt::trainer::list_checkpoints(killed / "checkpoints").empty() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 400)(rng)));
    if (kill(-job, SIGKILL) == 0) ++actual_kills;
    int status;
    waitpid(job, &status, 0);
  }
  BOOST_TEST(actual_kills > 0);
  BOOST_REQUIRE(finish(start(launcher(ranks) + kTrain + " --out " + killed.string() + " --resume auto")));

  const auto final_ref = lbt::trainer::checkpoint_path(reference / "checkpoints", 300);
  const auto final_killed = lbt::trainer::checkpoint_path(killed / "checkpoints", 300);
  BOOST_REQUIRE(fs::exists(final_killed));
  for (const char* name : {"params", "optim/momentum"}) {
    BOOST_TEST_CONTEXT("section " << name) {
      BOOST_TEST((section(final_ref, name) == section(final_killed, name)));
    }
  }
  BOOST_TEST(lines_without_timing(reference / "metrics.jsonl") == lines_without_timing(killed / "metrics.jsonl"),
             boost::test_tools::per_element());
  BOOST_TEST(lines_without_timing(reference / "eval.jsonl") == lines_without_timing(killed / "eval.jsonl"),
             boost::test_tools::per_element());
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

BOOST_AUTO_TEST_CASE(resume_refuses_a_changed_config_naming_the_key) {
  const fs::path run = scratch() / "changed";
  BOOST_REQUIRE(finish(start(kTrain + " --set train.steps=30 --out " + run.string())));
  auto r = lbt::test::run_lbt("train --resume " + run.string() + " --set optimizer.lr=0.5 --quiet");
  BOOST_TEST(r.code != 0);
  BOOST_TEST(r.err.find("optimizer.lr") != std::string::npos, r.err);
  auto none = lbt::test::run_lbt("train --resume " + (scratch() / "nothing").string() + " --quiet");
  BOOST_TEST(none.code != 0);
}
