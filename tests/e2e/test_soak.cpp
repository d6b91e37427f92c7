// Soak test: real `lbt sweep` processes on the synthetic sweep preset, made small,
// under seeded random faults: SIGKILL of the sweep or of a trial, Ctrl-C, SIGTERM, a double
// Ctrl-C, and a second `lbt sweep` on the same directory (which must exit 2 naming the owner),
// each followed by a rerun. Checks after every round that every file parses and that no trial
// that ended is ever run again, and at the end that every trial of the plan ended exactly once
// with the result an undisturbed sweep gets, bit for bit (training resumes bit-exactly).
// Rounds go on until every trial has ended, at most LBT_SOAK_ROUNDS (default 40) of them or 60 s;
// LBT_SOAK_SEED changes the seed (default 27).
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "experiments/sweep/sweep_results.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"
#include "support/run_files.hpp"

namespace fs = std::filesystem;
using lbt::experiments::is_final_status;
using lbt::experiments::read_csv;
using lbt::test::scratch;
using lbt::test::seconds_since;
using lbt::test::slurp;

namespace {

// 4 batch sizes from a 4-LR grid (and the adaptive search's further trials: 25 here), each up to
// about half a second, 2 at a time, each saving a checkpoint every 20 steps so that a killed
// trial has something to continue from.
std::string sweep_args(const fs::path& dir) {
  return "sweep --config " LBT_SOURCE_DIR
         "/experiments/configs/synthetic_sweep.toml "
         "--batch-sizes 16,64,256,1024 --target 'val_loss<=0.135' --jobs 2 --no-plots --quiet "
         "--retry-failed --set sweep.lr_multipliers=[0.5,1.0,2.0,4.0] "
         "--set data.synthetic.dim=256 --set model.spec=linear:256-1 "
         "--set data.synthetic.examples=32768 --set train.checkpoint_every=20 --out " +
         dir.string();
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

std::string status_in(const fs::path& run) {
  if (!fs::exists(run / "summary.json")) return "";
  return nlohmann::json::parse(slurp(run / "summary.json")).value("status", "");
}

// One sweep process under test.
struct Sweep {
  pid_t pid = -1;
  fs::path log;
  int status = 0;       // wait status once ended
  bool reaped = false;  // waited for: its pid may not be waited for again
};

class Soak {
 public:
  Soak(fs::path dir, unsigned seed) : dir_(std::move(dir)), rng_(seed) {}

  // One round: a sweep, maybe a second sweep on the same directory and a SIGKILLed trial while
  // it runs, then how it ends: SIGKILL, Ctrl-C, SIGTERM, a double Ctrl-C, or its own end.
  void round() {
    Sweep s = start();
    // Mostly once it has started (holds the lock; its handlers are installed by then): on a
    // loaded machine starting takes longer than the pauses, and faults would only ever hit
    // starting sweeps.
    if (chance(0.8)) wait_until_started(s, 30);
    pause(0.02, 0.4);
    if (chance(0.3)) concurrent_sweep_is_refused(s);
    if (chance(0.3)) kill_a_trial(s);
    pause(0.0, 0.2);
    // Letting a sweep end finishes the plan: not before a dozen rounds of faults.
    switch (pick(rounds_ < 12 ? 4 : 5)) {
      case 0:
        return kill_sweep(s);
      case 1:
        return interrupt(s, SIGINT, "ctrl_c");
      case 2:
        return interrupt(s, SIGTERM, "sigterm");
      case 3:
        return double_ctrl_c(s);
      default:
        return let_it_end(s, /*must_finish=*/false);
    }
  }

  // The undisturbed end: the sweep finishes every trial.
  void finish() {
    Sweep s = start();
    let_it_end(s, /*must_finish=*/true);
  }

  // Every file parses, and every trial that ended (but failed) is untouched since.
  void check_files() {
    const auto parsed = lbt::test::parse_every_file(dir_);
    for (const auto& e : parsed.errors) BOOST_ERROR("torn or unreadable: " << e);
    files_checked_ += parsed.json + parsed.jsonl + parsed.csv;
    lines_checked_ += parsed.lines;
    for (const auto& e : fs::directory_iterator(dir_ / "trials")) {
      const std::string name = e.path().filename(), st = status_in(e.path());
      // Left unfinished with a checkpoint: the next run continues it from there.
      if (!is_final_status(st) && fs::exists(e.path() / "checkpoints") &&
          !fs::is_empty(e.path() / "checkpoints")) {
        ++left_resumable_;
      }
      if (!is_final_status(st) || st == "failed") continue;
      const std::string summary = slurp(e.path() / "summary.json");
      auto [it, added] = ended_.emplace(name, summary);
      BOOST_TEST((added || it->second == summary), "trial " << name << " ran again after ending");
    }
  }

  void report(std::ostream& out) const {
    out << "soak: " << rounds_ << " rounds, " << invocations_
        << " lbt sweep runs; faults (of which while trials ran):";
    for (const auto& [kind, n] : faults_) {
      const auto mid = mid_trial_.find(kind);
      out << " " << kind << "=" << n << " (" << (mid == mid_trial_.end() ? 0 : mid->second) << ")";
    }
    out << "; trials left mid-way with a checkpoint (continued by the next run) " << left_resumable_
        << "; files parsed " << files_checked_ << " (" << lines_checked_ << " lines)\n";
  }

  int rounds_ = 0;

 private:
  Sweep start() {
    Sweep s;
    s.log = scratch() / ("soak_" + std::to_string(invocations_++) + ".log");
    s.pid = lbt::test::start_lbt(sweep_args(dir_), s.log);
    return s;
  }

  // Counts a fault about to be injected, and whether trials were running when it was.
  void count(const std::string& kind, Sweep& s) {
    ++faults_[kind];
    if (!ended(s) && !lbt::test::children_of(s.pid).empty()) ++mid_trial_[kind];
  }

  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  void pause(double lo, double hi) {
    const double s = std::uniform_real_distribution<double>(lo, hi)(rng_);
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
  }
  bool ended(Sweep& s) {
    if (!s.reaped) s.reaped = waitpid(s.pid, &s.status, WNOHANG) == s.pid;
    return s.reaped;
  }

  void wait_until_started(Sweep& s, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!ended(s) && !holds_lock(s) && seconds_since(t0) < seconds)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  // The lock file names the process that took the lock last (experiments/dir_lock.cpp).
  bool holds_lock(const Sweep& s) const {
    return slurp(dir_ / "sweep.lock").find("(pid " + std::to_string(s.pid) + " ") !=
           std::string::npos;
  }

  // Only while it runs: once waited for, its pid may belong to another process.
  void signal_sweep(Sweep& s, int signal) {
    if (!ended(s)) kill(s.pid, signal);
  }

  // Waits for the sweep; it must end within `seconds` (never hang).
  void wait(Sweep& s, double seconds, const char* after) {
    if (s.reaped) return;
    s.status = lbt::test::wait_for(s.pid, seconds);
    s.reaped = true;
    BOOST_REQUIRE_MESSAGE(s.status != -1, "lbt sweep (pid " << s.pid << ") did not end within "
                                                            << seconds << " s after " << after
                                                            << "; log: " << slurp(s.log));
  }

  // Exit code, or kKilledBy + signal for a sweep a signal ended (not the same as exiting 130).
  static constexpr int kKilledBy = 1000;
  static int code(const Sweep& s) {
    return WIFEXITED(s.status) ? WEXITSTATUS(s.status) : kKilledBy + WTERMSIG(s.status);
  }

  void concurrent_sweep_is_refused(Sweep& s) {
    // Only once `s` holds the lock: two sweeps started together race for it, and the one that
    // loses is rightly refused, whichever was started first.
    if (ended(s) || !holds_lock(s)) return;
    count("concurrent_sweep", s);
    Sweep second = start();
    // 120 s: when the owner ends meanwhile, the second sweep may run the rest of the plan.
    wait(second, 120, "starting beside another");
    if (ended(s)) return;  // the owner ended meanwhile: the second may have run
    const std::string text = slurp(second.log);
    BOOST_TEST(code(second) == 2, text);
    BOOST_TEST(text.find("in use by lbt sweep (pid " + std::to_string(s.pid)) != std::string::npos,
               text);
  }

  void kill_a_trial(Sweep& s) {
    const auto trials = lbt::test::children_of(s.pid);
    if (ended(s) || trials.empty()) return;
    count("kill_trial", s);
    kill(trials[pick(static_cast<int>(trials.size()))], SIGKILL);
  }

  // SIGKILL of the sweep: its trials die with it (PR_SET_PDEATHSIG), none is left behind.
  void kill_sweep(Sweep& s) {
    const auto trials = ended(s) ? std::vector<pid_t>{} : lbt::test::children_of(s.pid);
    count("kill_sweep", s);
    signal_sweep(s, SIGKILL);
    wait(s, 30, "SIGKILL");
    BOOST_TEST((code(s) == kKilledBy + SIGKILL || code(s) == 0 || code(s) == 6),
               code(s) << ": " << slurp(s.log));
    for (pid_t t : trials) {
      const auto t0 = std::chrono::steady_clock::now();
      while (kill(t, 0) == 0 && seconds_since(t0) < 5)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      BOOST_TEST(kill(t, 0) != 0, "trial " << t << " outlived its sweep");
    }
  }

  // Ctrl-C / SIGTERM: 130 / 143 after the trials saved themselves (0 or 6: it had ended).
  // A signal before the sweep installed its handlers (it takes the lock after) ends it as the
  // signal's default action does: nothing had started.
  bool killed_before_start(const Sweep& s, bool started, int signal) const {
    return !started && code(s) == kKilledBy + signal;
  }

  void interrupt(Sweep& s, int signal, const std::string& kind) {
    count(kind, s);
    const bool started = holds_lock(s);
    signal_sweep(s, signal);
    wait(s, 60, kind.c_str());
    const std::string text = slurp(s.log);
    BOOST_TEST((code(s) == 128 + signal || code(s) == 0 || code(s) == 6 ||
                killed_before_start(s, started, signal)),
               code(s) << ": " << text);
    // Stopped while checking its trials it wrote nothing and says to rerun the command.
    if (code(s) == 128 + signal) {
      BOOST_TEST((text.find("continue it with: lbt sweep") != std::string::npos ||
                  text.find("while checking its trials") != std::string::npos),
                 text);
    }
  }

  // The second Ctrl-C once the first was taken: exit 130 at once.
  void double_ctrl_c(Sweep& s) {
    count("double_ctrl_c", s);
    const bool started = holds_lock(s);
    signal_sweep(s, SIGINT);
    const auto t0 = std::chrono::steady_clock::now();
    while (slurp(s.log).find("lbt sweep: stopping") == std::string::npos &&
           seconds_since(t0) < 10) {
      if (ended(s)) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    signal_sweep(s, SIGINT);
    const auto t1 = std::chrono::steady_clock::now();
    wait(s, 30, "a second Ctrl-C");
    BOOST_TEST(
        (code(s) == 130 || code(s) == 0 || code(s) == 6 || killed_before_start(s, started, SIGINT)),
        code(s) << ": " << slurp(s.log));
    BOOST_TEST(seconds_since(t1) < 2.0);
  }

  void let_it_end(Sweep& s, bool must_finish) {
    wait(s, 120, "starting");
    const std::string text = slurp(s.log);
    // 6: a trial it ran was SIGKILLed (failed); the next run retries it (--retry-failed).
    BOOST_TEST((code(s) == 0 || (!must_finish && code(s) == 6)), code(s) << ": " << text);
  }

  fs::path dir_;
  std::mt19937 rng_;
  int invocations_ = 0, files_checked_ = 0, lines_checked_ = 0, left_resumable_ = 0;
  std::map<std::string, int> faults_, mid_trial_;
  std::map<std::string, std::string> ended_;  // trial -> its summary.json when it ended
};

// The rows of a sweep table without the columns that measure time.
std::vector<std::vector<std::string>> timeless_rows(const fs::path& csv) {
  auto t = read_csv(csv);
  const int wall = t.column("wall_time_s");
  for (auto& row : t.rows) {
    if (wall >= 0) row[wall].clear();
  }
  return t.rows;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_kills_interrupts_and_concurrent_sweeps_leave_every_trial_ended_once) {
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned seed = static_cast<unsigned>(env_int("LBT_SOAK_SEED", 27));
  const int max_rounds = env_int("LBT_SOAK_ROUNDS", 40);
  const fs::path reference = scratch() / "reference", dir = scratch() / "soak";
  const auto r = lbt::test::run_lbt(sweep_args(reference));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const double undisturbed_s = seconds_since(t0);

  Soak soak(dir, seed);
  const auto plan = read_csv(reference / "sweep.csv");
  auto all_ended = [&] {
    for (const auto& row : plan.rows) {
      const std::string st = status_in(dir / "trials" / row[0]);
      if (!is_final_status(st) || st == "failed") return false;
    }
    return true;
  };
  const auto t_faults = std::chrono::steady_clock::now();
  while (soak.rounds_ < max_rounds && seconds_since(t_faults) < 60 && !all_ended()) {
    soak.round();
    ++soak.rounds_;
    soak.check_files();
  }
  soak.finish();
  soak.check_files();

  // Every trial of the plan: one row, one final summary, the undisturbed sweep's result.
  const auto& want = plan;
  const auto got = read_csv(dir / "sweep.csv");
  BOOST_REQUIRE_EQUAL(got.rows.size(), want.rows.size());
  int reached = 0, resumes = 0;
  for (const auto& row : got.rows) {
    const std::string st = row[got.column("status")];
    BOOST_TEST_CONTEXT("trial " << row[0]) {
      BOOST_TEST((is_final_status(st) && st != "failed"), st);
      BOOST_TEST(st == status_in(dir / "trials" / row[0]));
      BOOST_TEST(
          lbt::test::compare_trials(reference / "trials" / row[0], dir / "trials" / row[0]) == "");
    }
    reached += st == "reached_target";
    // Each continuation of the trial from a checkpoint says so in its log.
    const std::string log = slurp(dir / "trials" / row[0] / "train.log");
    for (auto at = log.find("note: resuming"); at != std::string::npos;
         at = log.find("note: resuming", at + 1)) {
      ++resumes;
    }
  }
  for (const char* table : {"sweep.csv", "best.csv"}) {
    BOOST_TEST((timeless_rows(dir / table) == timeless_rows(reference / table)),
               table << " differs from the undisturbed sweep's:\n"
                     << slurp(dir / table) << "undisturbed:\n"
                     << slurp(reference / table));
  }

  std::ostringstream counts;
  soak.report(counts);
  counts << "soak: " << got.rows.size() << " trials (" << reached
         << " reached the target), each ended once and equal to the undisturbed sweep; " << resumes
         << " continuations of a trial from its checkpoint; seed " << seed << "; "
         << seconds_since(t0) << " s (undisturbed sweep " << undisturbed_s << " s)\n";
  std::cout << counts.str();
  BOOST_TEST_MESSAGE(counts.str());
}
