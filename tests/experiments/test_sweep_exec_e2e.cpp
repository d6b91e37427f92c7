// `lbt sweep --exec` through the real binary and a real Python program
// (tests/experiments/exec/steps_model.py, numpy only) whose steps-to-target follow
// S(B) = S_min (1 + B_crit / B) with an LR optimum: the search, the fit, a failing program,
// malformed output, an unknown placeholder, and a killed sweep rerun.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/child_process.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"

namespace fs = std::filesystem;
using lbt::experiments::read_csv;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

BOOST_AUTO_TEST_SUITE(sweep_exec)

namespace {

const std::string kProgram =
    "/usr/bin/python3 " + std::string(LBT_SOURCE_DIR) + "/tests/experiments/exec/steps_model.py";
const std::string kExec =
    "'" + kProgram + " {batch_size} {lr} {seed} {run_dir} {max_steps} {eval_every}'";

fs::path config() {
  const fs::path p = scratch() / "exec.toml";
  std::ofstream(p) << "[train]\ntarget = \"val_loss<=0.14\"\n"
                   << "[optimizer]\nlr = 0.2\n"  // the prior at 128 is 0.2: lr*(128) = 0.38
                   << "[schedule]\nscaling = \"linear\"\nreference_batch = 128\n"
                   << "[sweep]\nbatch_sizes = [16, 64, 256, 1024, 4096]\n"
                   << "lr_multipliers = [0.5, 2.0]\nseeds = 2\nmax_steps = 3000\n";
  return p;
}

std::string sweep(const fs::path& dir, const std::string& exec = kExec) {
  return "sweep --config " + config().string() + " --jobs 2 --no-plots --out " + dir.string() +
         " --exec " + exec;
}

}  // namespace

BOOST_AUTO_TEST_CASE(exec_sweep_searches_fits_and_keeps_going_past_a_failing_program) {
  const fs::path dir = scratch() / "exec";
  auto r = run_lbt(sweep(dir));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto fit = nlohmann::json::parse(slurp(dir / "fit.json"));
  const auto ci = fit["intervals"]["B_crit"];
  BOOST_TEST_MESSAGE("exec sweep: B_crit " << fit["B_crit"] << " " << ci << ", lr alpha "
                                           << fit["lr_law"]["alpha"]);
  BOOST_TEST(ci[0].get<double>() <= 600.0);  // the program's B_crit
  BOOST_TEST(600.0 <= ci[1].get<double>());
  BOOST_TEST(std::abs(fit["lr_law"]["alpha"].get<double>() - 0.75) < 0.15);
  // B_simple from the program's raw squared norms: 200 exactly.
  BOOST_TEST(fit["B_simple"].get<double>() == 200.0, boost::test_tools::tolerance(1e-9));
  const auto best = read_csv(dir / "best.csv");
  for (const auto& row : best.rows) BOOST_TEST(row[best.column("status")] == "reached_target");
  BOOST_TEST(slurp(dir / "trials" / "16_0" / "command.sh").find("steps_model.py 16 ") !=
             std::string::npos);
  // The plan of a program's sweep: its config is the trials', and the program is what to run
  // at the planned batch and LR; no memory estimate of lbt's own model (it printed one, and
  // "lbt train --config it as is": 2026-11-29 audit).
  r = run_lbt("plan --from " + dir.string() + " --max-steps 100");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("they ran a program") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("as it is") == std::string::npos, r.out);
  BOOST_TEST(r.out.find("memory: not estimated") != std::string::npos, r.out);
  BOOST_TEST(slurp(dir / "plan.toml").find("# The sweep's trials ran a program (--exec)") !=
             std::string::npos);
  BOOST_TEST(nlohmann::json::parse(slurp(dir / "plan.json"))["exec"].is_string());

  // A program that fails at one batch size: that batch size's trials are failed (with the
  // program's last words), the sweep runs the others and exits 6.
  const fs::path failing = scratch() / "failing";
  ::setenv("FAIL_BATCH", "64", 1);  // read by the program, through lbt's environment
  r = run_lbt(sweep(failing));
  ::unsetenv("FAIL_BATCH");
  BOOST_TEST(r.code == 6, r.err);
  const auto trials = read_csv(failing / "sweep.csv");
  int failed = 0, reached = 0;
  for (const auto& row : trials.rows) {
    failed += row[trials.column("status")] == "failed";
    reached += row[trials.column("status")] == "reached_target";
    if (row[trials.column("status")] == "failed")
      BOOST_TEST(row[trials.column("message")].find("asked to fail") != std::string::npos);
  }
  BOOST_TEST(failed == 2);  // the starting grid at B = 64; the search stops there
  BOOST_TEST(reached > 8);
}

BOOST_AUTO_TEST_CASE(bad_programs_and_placeholders_are_one_line_errors) {
  auto r = run_lbt(sweep(scratch() / "placeholder", "'echo {batch} {run_dir}'"));
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("unknown placeholder {batch}") != std::string::npos, r.err);
  // Malformed JSON: each trial failed naming the file and line; no eval.jsonl: failed too.
  const fs::path bad = scratch() / "malformed";
  r = run_lbt(sweep(scratch() / "braces", "'echo \"{{step: 1}}\" > {run_dir}/eval.jsonl'"));
  BOOST_TEST(r.code == 6);  // {{ is a literal brace: {step: 1} is no JSON
  r = run_lbt(sweep(bad, "'echo not-json > {run_dir}/eval.jsonl'"));
  BOOST_TEST(r.code == 6);
  auto trials = read_csv(bad / "sweep.csv");
  BOOST_TEST(trials.rows[0][trials.column("message")].find("eval.jsonl line 1 is not a JSON") !=
             std::string::npos);
  // A line of 2 MiB is read as its start, not held whole (a 300 MiB line took 1.5 GB).
  const fs::path runaway = scratch() / "runaway";
  r = run_lbt(
      sweep(runaway, "'head -c 2097152 /dev/zero | tr \"\\\\000\" x > {run_dir}/eval.jsonl'"));
  BOOST_TEST(r.code == 6, r.err);
  trials = read_csv(runaway / "sweep.csv");
  BOOST_TEST(trials.rows[0][trials.column("message")].find("eval.jsonl line 1 is over 1 MiB") !=
                 std::string::npos,
             trials.rows[0][trials.column("message")]);
  const fs::path silent = scratch() / "silent";
  r = run_lbt(sweep(silent, "'true {run_dir}'"));
  BOOST_TEST(r.code == 6);
  trials = read_csv(silent / "sweep.csv");
  BOOST_TEST(trials.rows[0][trials.column("message")].find("wrote no") != std::string::npos);
  const fs::path fifo = scratch() / "fifo";  // it read "wrote no eval.jsonl"
  r = run_lbt(sweep(fifo, "'mkfifo {run_dir}/eval.jsonl'"));
  BOOST_TEST(r.code == 6);
  trials = read_csv(fifo / "sweep.csv");
  BOOST_TEST(trials.rows[0][trials.column("message")].find("as no regular file") !=
             std::string::npos);
}

// A command fixed after every trial failed (mpirun wanting --oversubscribe: 2026-11-30 audit)
// reruns them under --retry-failed; once trials have results, another command would mix two
// programs' figures in one fit, and is refused.
BOOST_AUTO_TEST_CASE(retry_failed_takes_a_new_command_only_where_no_trial_has_a_result) {
  const fs::path dir = scratch() / "exec_fixed";
  auto r = run_lbt(sweep(dir, "'false {run_dir}'"));
  BOOST_TEST(r.code == 6, r.err);  // every trial failed
  r = run_lbt(sweep(dir) + " --retry-failed");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto best = read_csv(dir / "best.csv");
  for (const auto& row : best.rows) BOOST_TEST(row[best.column("status")] == "reached_target");
  r = run_lbt(sweep(dir, "'" + kProgram + " {batch_size} {lr} {seed} {run_dir} {max_steps}'") +
              " --retry-failed");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("trials have results from") != std::string::npos, r.err);
}

// Every trial's environment names its place in the plan, LBT_TRIAL_INDEX (a trial on
// model.device=cuda takes GPU index mod GPUs, so concurrent trials spread over a machine's
// GPUs), and its share of the cores, LBT_THREADS and {threads} (each program took every core:
// 2026-11-30 audit): a shell program writes them down, then fails (no eval.jsonl).
BOOST_AUTO_TEST_CASE(each_trial_is_told_its_place_in_the_plan) {
  const fs::path dir = scratch() / "exec_index", cfg = scratch() / "exec_index.toml";
  std::ofstream(cfg) << "[train]\ntarget = \"val_loss<=0.14\"\n[optimizer]\nlr = 0.2\n"
                     << "[sweep]\nbatch_sizes = [16, 64, 256]\nseeds = 2\nmax_steps = 100\n";
  const auto r =
      run_lbt("sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string() +
              " --exec 'printf \"%s %s %s\" \"$LBT_TRIAL_INDEX\" \"$LBT_THREADS\" {threads}"
              " > {run_dir}/index.txt'");
  BOOST_TEST(r.code == 6, r.err);  // every trial failed
  // The plan: batch sizes in order, seeds 0..2 within each.
  int index = 0;
  for (const std::string batch : {"16", "64", "256"}) {
    for (int k = 0; k < 3; ++k, ++index) {
      const fs::path file = dir / "trials" / (batch + "_" + std::to_string(k)) / "index.txt";
      // And its share of the cores, as lbt's own trials get it (cores / --jobs).
      const std::string threads = std::to_string(std::max(1, lbt::experiments::task_cores() / 2));
      BOOST_TEST(slurp(file) == std::to_string(index) + " " + threads + " " + threads, file);
    }
  }
}

// lbt train itself as the program (the way to trials on several ranks: --exec 'mpirun -np N lbt
// train ...'): its replay that brackets its own reading writes earlier steps again, marked
// "refinement", which the protocol skips. Every trial that met the target had failed as a
// program restarting (2026-11-30 audit).
BOOST_AUTO_TEST_CASE(lbt_train_as_the_program_reaches_its_targets) {
  const fs::path dir = scratch() / "exec_lbt_train";
  const std::string config =
      std::string(LBT_SOURCE_DIR) + "/experiments/configs/synthetic_sweep.toml";
  const std::string train =
      std::string(LBT_BINARY) + " train --config " + config +
      " --out {run_dir} --quiet --set train.global_batch={batch_size}"
      " --set optimizer.lr={lr} --set train.seed={seed} --set train.steps={max_steps}"
      " --set train.eval_every={eval_every} --set train.threads=1";
  const auto r = run_lbt("sweep --config " + config + " --jobs 2 --no-plots --out " + dir.string() +
                         " --set 'sweep.batch_sizes=[16,64]' --set sweep.seeds=1"
                         " --set sweep.lr_search=grid --set 'sweep.lr_multipliers=[1.0]'"
                         " --exec '" +
                         train + "'");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto trials = read_csv(dir / "sweep.csv");
  BOOST_REQUIRE_EQUAL(trials.rows.size(), 2u);
  for (const auto& row : trials.rows) {
    BOOST_TEST(row[trials.column("status")] == "reached_target", row[trials.column("message")]);
    // The run did replay: its eval.jsonl has refinement lines.
    BOOST_TEST(
        slurp(dir / row[trials.column("run_dir")] / "eval.jsonl").find("\"refinement\":true") !=
        std::string::npos);
  }
}

// A program that catches the sweep's forwarded SIGINT and exits 0 short of the target stopped
// early: its trial is interrupted, and a rerun runs it to its outcome (it read budget_exhausted,
// which no rerun ran again; 2026-11-29 audit).
BOOST_AUTO_TEST_CASE(a_program_that_catches_the_sweeps_sigint_is_run_again) {
  const fs::path dir = scratch() / "exec_caught", log = scratch() / "exec_caught.log";
  setenv("CATCH_SIGINT", "1", 1);  // inherited by the sweep and its programs
  const pid_t pid = lbt::test::start_lbt(sweep(dir), log);
  unsetenv("CATCH_SIGINT");
  // Both trials in their loops: a Python program still importing numpy can lose the SIGINT
  // (numpy's import swallows KeyboardInterrupt now and then), and the sweep, which signals once,
  // then waited for it to end: the case timed out under load, 1 run in 30.
  const bool started = lbt::test::wait_until(
      [&] {
        return fs::exists(dir / "trials" / "16_0" / "eval.jsonl") &&
               fs::exists(dir / "trials" / "16_1" / "eval.jsonl");
      },
      60);
  BOOST_REQUIRE_MESSAGE(started, slurp(log));
  kill(pid, SIGINT);
  BOOST_TEST(WEXITSTATUS(lbt::test::wait_for(pid, 60)) == 130, slurp(log));
  auto trials = read_csv(dir / "sweep.csv");
  int interrupted = 0;
  for (const auto& row : trials.rows) {
    const std::string status = row[trials.column("status")];
    BOOST_TEST((status == "interrupted" || status == "reached_target" || status == "pending"),
               row[0] << ": " << status);
    interrupted += status == "interrupted";
  }
  BOOST_TEST(interrupted >= 1);
  const auto rerun = run_lbt(sweep(dir));
  BOOST_REQUIRE_MESSAGE(rerun.code == 0, rerun.err);
  trials = read_csv(dir / "sweep.csv");
  for (const auto& row : trials.rows)
    BOOST_TEST(lbt::experiments::is_final_status(row[trials.column("status")]), row[0]);
}

// A program that lost the forwarded SIGINT (here: ignores it) kept the sweep waiting without a
// word until it ended: the sweep names the trials it still waits for, and a second signal ends it.
BOOST_AUTO_TEST_CASE(a_program_that_lost_the_sigint_is_named_and_a_second_signal_ends_the_sweep) {
  const fs::path dir = scratch() / "exec_deaf", log = scratch() / "exec_deaf.log";
  const fs::path program = scratch() / "deaf.sh";
  std::ofstream(program) << "#!/bin/sh\ntrap '' INT TERM\ntouch \"$1/ready\"\nsleep 60\n";
  fs::permissions(program, fs::perms::owner_all);
  const pid_t pid = lbt::test::start_lbt(sweep(dir, "'" + program.string() + " {run_dir}'"), log);
  const bool started = lbt::test::wait_until(
      [&] {
        return fs::exists(dir / "trials" / "16_0" / "ready") &&
               fs::exists(dir / "trials" / "16_1" / "ready");
      },
      60);
  BOOST_REQUIRE_MESSAGE(started, slurp(log));
  kill(pid, SIGINT);
  const bool named = lbt::test::wait_until(
      [&] { return slurp(log).find("still waiting for 16_0, 16_1 to stop") != std::string::npos; },
      30);
  BOOST_TEST(named, slurp(log));
  kill(pid, SIGINT);
  BOOST_TEST(WEXITSTATUS(lbt::test::wait_for(pid, 20)) == 130, slurp(log));
}

BOOST_AUTO_TEST_SUITE_END()
