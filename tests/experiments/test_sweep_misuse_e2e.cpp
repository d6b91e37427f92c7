// End to end through the real `lbt` binary, a sweep misused: a second sweep on a busy
// directory, trials that fail, a rerun with other settings (and --extend).
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "experiments/sweep/sweep_results.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"
#include "sweep_fixtures.hpp"

namespace fs = std::filesystem;
using lbt::experiments::read_csv;
using lbt::test::run_lbt;
using Result = lbt::test::CliResult;
using lbt::test::scratch;
using lbt::test::slurp;
using namespace lbt::test::sweep_e2e;

// One sweep owns its directory: a second on it exits 2 at once, naming the first (two would run
// the same trials twice and clear each other's running trials).
BOOST_AUTO_TEST_CASE(a_second_sweep_on_a_busy_directory_exits_2_naming_the_owner) {
  // A trial far longer than the test (it is killed below): 2,000,000 steps took 3.4 s once a
  // tiny step woke no second thread (2026-11-27), so the owner's first trial could end before
  // the second sweep looked; 50,000,000 take over a minute.
  const fs::path cfg = write_config("busy.toml", "val_loss<=0.1", 50000000);
  const fs::path dir = scratch() / "busy";
  const std::string log = (scratch() / "busy.log").string();
  const pid_t first = start_sweep(cfg, dir, log);
  // Wait for its first trial to start.
  lbt::test::wait_until([&] { return fs::exists(dir / "trials" / "8_0" / "summary.json"); }, 30);
  const auto t0 = std::chrono::steady_clock::now();
  // `timeout`: without the lock (main 38e797a) this second sweep ran the whole plan again.
  const fs::path err = scratch() / "busy_second.err";
  const int raw =
      std::system(("timeout 30 " + std::string(LBT_BINARY) + " sweep --config " + cfg.string() +
                   " --jobs 1 --out " + dir.string() + " --no-plots >/dev/null 2>" + err.string())
                      .c_str());
  Result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, "", slurp(err)};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST(r.code == 2, "stderr: " << r.err);
  BOOST_TEST(seconds < 10.0);
  BOOST_TEST(r.err.find("pid " + std::to_string(first)) != std::string::npos, r.err);
  BOOST_TEST(r.err.find("in use") != std::string::npos, r.err);
  // The owner's trial was not disturbed: it is still running, and holds its run directory
  // against a resume of it by hand.
  BOOST_TEST(status_of(dir / "trials" / "8_0") == "running");
  r = run_lbt("train --quiet --resume " + (dir / "trials" / "8_0").string());
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("is in use by lbt train") != std::string::npos, r.err);
  // The kernel releases the lock when the owner dies, however it dies.
  kill(-first, SIGKILL);
  int status = 0;
  waitpid(first, &status, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // A trial directory another process holds (its run.lock, as a run of it started by hand holds
  // it) stops a rerun before the sweep clears anything.
  const fs::path held = dir / "trials" / "8_0" / "run.lock";
  const auto trial_files = summary_times(dir);
  const int fd = ::open(held.c_str(), O_RDWR);
  BOOST_REQUIRE(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
  BOOST_REQUIRE(::ftruncate(fd, 0) == 0);  // as a holder does, replacing the killed trial's line
  r = run_lbt("sweep --config " + cfg.string() + " --out " + dir.string() + " --no-plots");
  BOOST_TEST(r.code == 2, "stderr: " << r.err);
  BOOST_TEST(r.err.find("trials/8_0 is in use") != std::string::npos, r.err);
  BOOST_TEST((summary_times(dir) == trial_files));
  ::close(fd);
  r = run_lbt("sweep --config " + cfg.string() + " --out " + dir.string() +
              " --collect --no-plots");
  BOOST_TEST(r.code == 0, "stderr: " << r.err);
  // --collect where no sweep is: refused, nothing written (it wrote an empty sweep, exit 0).
  const fs::path none = scratch() / "no_sweep_here";
  r = run_lbt("sweep --config " + cfg.string() + " --out " + none.string() +
              " --collect --no-plots");
  BOOST_TEST(r.code == 2, "stderr: " << r.err);
  BOOST_TEST(r.err.find("holds no sweep (no sweep.json)") != std::string::npos, r.err);
  BOOST_TEST(!fs::exists(none));
}

// A sweep whose trials crashed (not diverged) exits 6 listing them. Here every trial's program
// exits 1 (a model that does not fit the data is found by the sweep's checks before any trial).
BOOST_AUTO_TEST_CASE(a_sweep_with_failed_trials_exits_6_listing_them) {
  const fs::path cfg = write_config("crash.toml", "val_loss<=0.14", 20);
  const fs::path dir = scratch() / "crash";
  Result r = run_lbt("sweep --config " + cfg.string() + " --jobs 2 --out " + dir.string() +
                     " --no-plots --exec false");
  BOOST_TEST(r.code == 6, "stderr: " << r.err);
  BOOST_TEST(r.err.find("8 of 8 trials failed") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("512_1") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("--retry-failed") != std::string::npos, r.err);
  // Diverged trials are an outcome: exit 0 (see fit_refuses... for budget_exhausted).
  const fs::path diverged = scratch() / "diverged";
  r = run_lbt("sweep --config " + cfg.string() + " --jobs 2 --out " + diverged.string() +
              " --no-plots --set sweep.lr_multipliers=[1e7]");
  BOOST_TEST(r.code == 0, "stderr: " << r.err);
  const auto t = read_csv(diverged / "sweep.csv");
  for (const auto& row : t.rows) BOOST_TEST(row[t.column("status")] == "diverged");
}

// A failure every trial would share, which the sweep's checks before the first trial cannot
// see: with no GPU visible (CUDA_VISIBLE_DEVICES=-1), a model.device=cuda trial exits 2 in its
// own program on every machine (no usable GPU; in a build without CUDA, no lbt-cuda). The sweep
// stops after the first such trial, exits 2 naming it and the cause, and leaves it unfinished
// (no verdict), so a rerun on a fixed machine runs it; before, every trial ran and failed alike,
// each recorded as failed for good.
BOOST_AUTO_TEST_CASE(a_failure_every_trial_shares_stops_the_sweep_at_the_first_trial) {
  const fs::path dir = scratch() / "shared";
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  const Result r =
      run_lbt("sweep --config " + std::string(LBT_SOURCE_DIR) +
              "/experiments/configs/fmnist_mlp_sweep.toml --jobs 1 --out " + dir.string() +
              " --no-plots --set model.device=cuda --set sweep.batch_sizes=[32,64]");
  unsetenv("CUDA_VISIBLE_DEVICES");
  BOOST_TEST(r.code == 2, "stderr: " << r.err);
  const std::string first = "error: trial 32_0 failed before training on what every trial shares";
  BOOST_TEST(r.err.find(first) != std::string::npos, r.err);
  BOOST_TEST((r.err.find("no usable NVIDIA GPU") != std::string::npos ||
              r.err.find("built without CUDA") != std::string::npos),
             r.err);
  BOOST_TEST(r.err.find("the same command continues this sweep") != std::string::npos, r.err);
  int trials = 0;
  for (const auto& e : fs::directory_iterator(dir / "trials")) {
    ++trials;
    BOOST_TEST(!fs::exists(e.path() / "summary.json"), e.path());
  }
  BOOST_TEST(trials == 1);
  const auto t = read_csv(dir / "sweep.csv");
  BOOST_TEST_REQUIRE(!t.rows.empty());
  for (const auto& row : t.rows) BOOST_TEST(row[t.column("status")] == "pending");
}

// A rerun with changed settings is refused naming what differs (the old trials do not belong
// to the new plan); --extend adds new batch sizes only.
BOOST_AUTO_TEST_CASE(a_rerun_with_other_settings_is_refused_and_extend_adds_only_new_trials) {
  const fs::path cfg = write_config("plan.toml", "val_loss<=0.14", 20);
  const fs::path dir = scratch() / "plan";
  const std::string base =
      "sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string();
  Result r = run_lbt(base);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_lbt(base + " --target 'val_loss<=0.2'");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("target") != std::string::npos, r.err);
  r = run_lbt(base + " --set train.seed=7");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("train.seed=7") != std::string::npos, r.err);
  // Another LR moves every trial's: three are shown and the rest counted (one line each ran to
  // hundreds before the hint), the LRs as written (0.2, not 0.200000).
  r = run_lbt(base + " --set optimizer.lr=0.2");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("... and 5 more trials likewise") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("00000,") == std::string::npos, r.err);
  r = run_lbt(base + " --batch-sizes 8,32,128,512,1024");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("--extend") != std::string::npos, r.err);
  r = run_lbt(base + " --batch-sizes 8,32,128,512,1024 --extend");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("sweep: 10 trials (2 run now, 8 kept)") != std::string::npos, r.out);
  // The extended plan is the directory's plan now: a plain rerun of it resumes.
  r = run_lbt(base + " --batch-sizes 8,32,128,512,1024");
  BOOST_TEST(r.code == 0, r.err);
}

// A rerun whose fit is skipped removes the fit.json an earlier run wrote: beside rewritten CSVs
// it described other data, and the plots drew it over the new points (2026-11-29 audit). A
// fit.json that cannot be written is an error, exit 1 (it read "fit: skipped", exit 0).
BOOST_AUTO_TEST_CASE(a_skipped_or_unwritable_fit_leaves_no_stale_fit_json) {
  const fs::path cfg = write_config("stale_fit.toml", "val_loss<=0.14", 400);
  const fs::path dir = scratch() / "stale_fit";
  const std::string base =
      "sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string();
  Result r = run_lbt(base);
  BOOST_REQUIRE_MESSAGE(r.code == 0 && fs::exists(dir / "fit.json"), r.err);
  fs::remove_all(dir / "trials");  // every trial pending: nothing to fit
  r = run_lbt(base + " --collect");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("fit: skipped") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("trials collected") != std::string::npos, r.out);  // not "0 kept"
  BOOST_TEST(!fs::exists(dir / "fit.json"));
  r = run_lbt(base);  // the trials again, and their fit
  BOOST_REQUIRE_MESSAGE(r.code == 0 && fs::exists(dir / "fit.json"), r.err);
  fs::remove(dir / "fit.json");
  fs::create_directories(dir / "fit.json" / "in_the_way");
  r = run_lbt(base + " --collect");
  BOOST_TEST(r.code == 1, r.err);
  BOOST_TEST(r.err.find("cannot replace " + (dir / "fit.json").string()) != std::string::npos,
             r.err);
  BOOST_TEST(fs::exists(dir / "fit.json" / "in_the_way"));
}

// A rerun on other kernels (LBT_CPU, LBT_GEMM, LBT_CONV: another node or environment) keeps the
// finished trials, whose numbers summed in another order: it was silent (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(a_rerun_on_other_kernels_warns_naming_the_trials) {
  const fs::path cfg = write_config("other_kernels.toml", "val_loss<=0.14", 400);
  const fs::path dir = scratch() / "other_kernels";
  const std::string base =
      "sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string();
  Result r = run_lbt(base);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.err.find("other kernels") == std::string::npos, r.err);
  ::setenv("LBT_CPU", "generic", 1);  // another path on every machine lbt runs on
  r = run_lbt(base);
  ::unsetenv("LBT_CPU");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.err.find("ran on other kernels (cpu path") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("than this run's (cpu path generic") != std::string::npos, r.err);
}

// --launcher slurm: --retry-failed puts the failed trials in the array and on its tasks'
// command (the array held only unfinished ones: "every trial of the plan has ended"); options
// lbt writes itself are refused in sweep.slurm_options (sbatch took the later line silently); a
// directory with a backslash, which SLURM drops from log paths so no task could start, is
// refused; a task past the array's list says so (bash said "unbound variable"). 2026-11-29.
BOOST_AUTO_TEST_CASE(slurm_arrays_retry_failed_trials_and_refuse_what_cannot_run) {
  const fs::path cfg = write_config("slurm_retry.toml", "val_loss<=0.14", 400);
  const fs::path dir = scratch() / "slurm_retry";
  const std::string base = "sweep --config " + cfg.string() + " --no-plots --out " + dir.string();
  Result r = run_lbt(base + " --jobs 2");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  std::ofstream(dir / "trials" / "32_1" / "summary.json", std::ios::trunc)
      << R"({"status": "failed", "error": "by hand", "global_batch": 32})";
  r = run_lbt(base + " --launcher slurm");
  BOOST_TEST(r.err.find("every trial of the plan has ended") != std::string::npos, r.err);
  r = run_lbt(base + " --launcher slurm --retry-failed");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string script = slurp(dir / "sweep.sbatch");
  BOOST_TEST(script.find("trials=(32_1)\n") != std::string::npos, script);
  BOOST_TEST(script.find("--retry-failed --no-plots --trial") != std::string::npos, script);
  const int past = std::system(("SLURM_ARRAY_TASK_ID=3 bash " + (dir / "sweep.sbatch").string() +
                                " > " + (scratch() / "past.log").string() + " 2>&1")
                                   .c_str());
  BOOST_TEST(WEXITSTATUS(past) == 2);
  BOOST_TEST(slurp(scratch() / "past.log").find("array task 3 is past this script's 1 trials") !=
             std::string::npos);
  r = run_lbt(base + " --launcher slurm --set 'sweep.slurm_options=[\"--array=0-99\"]'");
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("'--array=0-99' sets what lbt writes itself") != std::string::npos, r.err);
  r = run_lbt("sweep --config " + cfg.string() + " --launcher slurm --out '" +
              (scratch() / "back\\slash").string() + "'");
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("holds a backslash") != std::string::npos, r.err);
}

// A trial's summary.json emptied or overwritten by hand: --collect, which runs nothing, exits 3
// naming the file and writes nothing (it read the trial as running and left it out of best.csv
// and the fit, moving B_crit, exit 0); a rerun says which trials run again and runs them, and
// the deterministic trials give the same best trials and steps.
BOOST_AUTO_TEST_CASE(an_unreadable_trial_summary_stops_collect_and_is_rerun_by_a_sweep) {
  const fs::path cfg = write_config("damaged.toml", "val_loss<=0.14", 20);
  const fs::path dir = scratch() / "damaged";
  const std::string base =
      "sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string();
  Result r = run_lbt(base);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string best = slurp(dir / "best.csv"), fit = slurp(dir / "fit.json");
  // Each batch size's best trial and its steps to the target.
  const auto best_trials = [](const fs::path& sweep) {
    const auto t = read_csv(sweep / "best.csv");
    std::vector<std::string> out;
    for (const auto& row : t.rows)
      out.push_back(row[t.column("trial")] + " " + row[t.column("steps_to_target")]);
    return out;
  };
  const std::vector<std::string> best_trials_before = best_trials(dir);
  BOOST_TEST_REQUIRE(best_trials_before.size() == 4u);
  std::ofstream(dir / "trials" / "32_0" / "summary.json", std::ios::trunc);
  std::ofstream(dir / "trials" / "128_1" / "summary.json", std::ios::trunc) << "garbage";
  // A step to the target edited to a string was read as none (2026-11-30 audit).
  std::string edited;
  for (const std::string& best_trial : best_trials_before)
    if (edited.empty() && !best_trial.starts_with("32_0") && !best_trial.starts_with("128_1"))
      edited = best_trial.substr(0, best_trial.find(' '));
  auto summary = nlohmann::json::parse(slurp(dir / "trials" / edited / "summary.json"));
  summary["steps_to_target"] = "45";
  std::ofstream(dir / "trials" / edited / "summary.json", std::ios::trunc) << summary.dump();
  r = run_lbt(base + " --collect");
  BOOST_TEST(r.code == 3, "stderr: " << r.err);
  BOOST_TEST(r.err.find("trials/32_0/summary.json is empty") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("without --collect to run trial 32_0 again") != std::string::npos, r.err);
  BOOST_TEST(slurp(dir / "best.csv") == best);
  BOOST_TEST(slurp(dir / "fit.json") == fit);
  r = run_lbt(base);
  BOOST_TEST(r.code == 0, "stderr: " << r.err);
  BOOST_TEST(r.err.find("trials/128_1/summary.json is not JSON") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("trial 128_1 runs again") != std::string::npos, r.err);
  BOOST_TEST(
      r.err.find(edited + "/summary.json is not what lbt wrote: its steps_to_target \"45\"") !=
          std::string::npos,
      r.err);
  BOOST_TEST(r.out.find("(3 run now, 5 kept)") != std::string::npos, r.out);
  BOOST_TEST(best_trials(dir) == best_trials_before);  // wall times aside
}

// A trial directory another process takes while the sweep runs (a run of a trial not yet
// started, begun by hand): the sweep starts no trial after it, lets the running one end and
// exits 2 naming the holder; the taken directory is not cleared (it held only its lock here).
// The first trial (2,000,000 steps, an unreachable target) takes about 3.5 s alone: long enough
// for the test to take the second trial's lock first. The wait allows for CI's second test
// beside it (in CI a 300,000-step trial did not end within 120 s while its tiny products woke
// both cores each step; since 2026-11-27 none does: bench/contention.sh).
BOOST_AUTO_TEST_CASE(a_trial_taken_by_another_process_mid_sweep_stops_the_sweep_untouched) {
  const fs::path cfg = write_config("midway.toml", "val_loss<=0.1", 2000000);
  const fs::path dir = scratch() / "midway";
  const std::string log = (scratch() / "midway.log").string();
  const pid_t sweep = start_sweep(cfg, dir, log);
  lbt::test::wait_until([&] { return fs::exists(dir / "trials" / "8_0" / "summary.json"); }, 60);
  fs::create_directories(dir / "trials" / "8_1");
  const int fd = ::open((dir / "trials" / "8_1" / "run.lock").c_str(), O_RDWR | O_CREAT, 0644);
  BOOST_REQUIRE(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);
  const int status = lbt::test::wait_for(sweep, 300);
  ::close(fd);
  const std::string text = slurp(log);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 2), text);
  BOOST_TEST(text.find("trials/8_1 is in use") != std::string::npos, text);
  BOOST_TEST(status_of(dir / "trials" / "8_0") != "running", "the running trial ran to its end");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir / "trials" / "8_1"))
    left.push_back(e.path().filename().string());
  BOOST_TEST((left == std::vector<std::string>{"run.lock"}));
}

// A trial's run.lock passes from the sweep, which clears the trial's directory under it, to the
// trial's lbt train with no moment free (experiments/dir_lock.hpp, kInheritedLockFd): a process
// trying the locks of the started trials (those with a train.log) all through a sweep takes none
// before that trial has ended. Before 2026-11-28 the sweep released the lock first, and such a
// process (a resume of the trial by hand) could take the directory while lbt train was starting.
BOOST_AUTO_TEST_CASE(a_trials_lock_passes_from_the_sweep_to_its_lbt_train_without_a_gap) {
  const fs::path cfg = write_config("handoff.toml", "val_loss<=0.1", 2000);
  const fs::path dir = scratch() / "handoff";
  const std::string log = (scratch() / "handoff.log").string();
  const pid_t sweep = start_sweep(cfg, dir, log);
  auto ended = [](const fs::path& trial) {  // its summary.json says it has ended
    std::error_code ec;
    if (!fs::exists(trial / "summary.json", ec)) return false;
    const auto s = nlohmann::json::parse(slurp(trial / "summary.json"), nullptr, false);
    return !s.is_discarded() && s.value("status", "running") != "running";
  };
  int tries = 0, status = 0;
  std::vector<std::string> taken_early;
  while (::waitpid(sweep, &status, WNOHANG) == 0) {
    std::error_code ec;
    for (fs::directory_iterator it(dir / "trials", ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path trial = it->path();
      if (!fs::exists(trial / "train.log", ec)) continue;
      const int fd = ::open((trial / "run.lock").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ++tries;
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && !ended(trial))
        taken_early.push_back(trial.filename().string());
      ::close(fd);
    }
  }
  const std::string text = slurp(log);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) != 2), text);
  BOOST_TEST(text.find("is in use") == std::string::npos, text);
  BOOST_TEST(tries > 100, tries << " tries");
  BOOST_TEST(taken_early.empty(), taken_early.size()
                                      << " trials' locks taken while they ran, the first "
                                      << (taken_early.empty() ? "" : taken_early[0]));
}

// Options that contradict each other are refused before anything runs: each was accepted with
// one of them ignored (--trial won over --trial-index, --submit ran the trials here, --overwrite
// was dropped beside --resume, sweep.lr_trials beside lr_multipliers; 2026-11-29 audit).
BOOST_AUTO_TEST_CASE(contradictory_options_are_refused_naming_both) {
  const fs::path cfg = write_config("contradict.toml", "val_loss<=0.14", 40);
  const std::string sweep =
      "sweep --check --config " + cfg.string() + " --out " + (scratch() / "contradict").string();
  for (const auto& [args, says] :
       {std::pair<std::string, std::string>{sweep + " --trial-index 1 --trial 16_0",
                                            "--trial-index excludes --trial"},
        {sweep + " --submit", "--submit sbatches the SLURM script"},
        {sweep + " --set sweep.lr_search=grid --set sweep.lr_multipliers=[1.0,2.0]"
                 " --set sweep.lr_trials=5",
         "sweep.lr_trials must be the number of sweep.lr_multipliers (2)"},
        {"train --resume " + (scratch() / "none").string() + " --overwrite",
         "--overwrite excludes --resume"}}) {
    const Result r = run_lbt(args);
    BOOST_TEST(r.code == 2, args);
    BOOST_TEST(r.err.find(says) != std::string::npos, r.err);
  }
}
