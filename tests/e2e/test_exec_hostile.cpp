// `lbt sweep --exec` against hostile and careless input, through the real binary and
// real programs (tests/e2e/exec/: a Python program that misbehaves on request, a shell script
// that hangs): names that a shell would run ($(...), backticks, ;, quotes, spaces, newlines) reach
// the program as exact arguments and run nothing; a hanging program times out and its whole
// process group dies; SIGTERM of the sweep kills each trial's group and the command it prints
// continues the sweep; a sweep killed with -9 leaves a group that a rerun refuses to run beside;
// non-finite metrics diverge, steps out of order fail naming the line, a malformed noise line
// and a deleted run directory cost one trial at most.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "experiments/sweep/sweep_results.hpp"
#include "experiments/sweep/sweep_slurm.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"

namespace fs = std::filesystem;
using lbt::experiments::read_csv;
using lbt::test::CliResult;
using lbt::test::scratch;
using lbt::test::seconds_since;
using lbt::test::slurp;

namespace {

const std::string kExecDir = std::string(LBT_SOURCE_DIR) + "/tests/e2e/exec";
const std::string kProgram = "/usr/bin/python3 " + kExecDir + "/protocol_program.py";
const std::string kHang = kExecDir + "/hang.sh";
// Names a shell would read as commands, quoting and word breaks.
const std::string kHostile = "o $(touch PWNED) `touch PWNED` a;touch PWNED;b \"q\" 'r'\nline2";

fs::path write_config(const fs::path& path, const std::string& batch_sizes) {
  std::ofstream(path) << "[train]\ntarget = \"val_loss<=0.14\"\n[optimizer]\nlr = 0.2\n"
                      << "[schedule]\nscaling = \"linear\"\nreference_batch = 128\n"
                      << "[sweep]\nbatch_sizes = [" << batch_sizes << "]\n"
                      << "lr_search = \"grid\"\nlr_multipliers = [1.0]\nmax_steps = 3000\n";
  return path;
}

// Starts `lbt args...` in `cwd` without a shell (the arguments arrive as given), in its own
// process group, stdout and stderr to `log`.
pid_t start_argv(const std::vector<std::string>& args, const fs::path& cwd, const fs::path& log) {
  std::vector<std::string> all{LBT_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (chdir(cwd.c_str()) != 0 || fd < 0) _exit(127);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

CliResult run_argv(const std::vector<std::string>& args, const fs::path& cwd = scratch()) {
  const fs::path log = scratch() / "argv.log";
  const int status = lbt::test::wait_for(start_argv(args, cwd, log), 60);
  return {status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", slurp(log)};
}

// Running, i.e. not gone and not a zombie (a container's init may never reap one).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  return stat.substr(stat.rfind(')') + 2, 1) != "Z";
}

pid_t pid_in(const fs::path& file) {
  return std::stoi(slurp(file));
}

bool wait_for_file(const fs::path& file, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(file)) {
    if (seconds_since(t0) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its contents
  return true;
}

std::string column(const fs::path& sweep_dir, const std::string& trial, const std::string& name) {
  const auto t = read_csv(sweep_dir / "sweep.csv");
  for (const auto& row : t.rows) {
    if (row[t.column("trial")] == trial) return row[t.column(name)];
  }
  return "(no trial " + trial + ")";
}

bool no_pwned(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() == "PWNED") return false;
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(hostile_names_reach_the_program_as_exact_arguments_and_run_nothing) {
  const fs::path home = scratch() / "hostile";
  fs::create_directories(home);
  const fs::path config = write_config(home / "syn$(touch PWNED);`touch PWNED`.toml", "64");
  // As argument words: the run directory from a hostile --out, the target's '<', a quoted word.
  const std::string out = (home / kHostile).string();
  auto r = run_argv({"sweep", "--config", config.string(), "--out", out, "--no-plots", "--exec",
                     kProgram + " argv {run_dir} 64 {train.target} 'a {lr} b' \"{run_dir}\""},
                    home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string run_dir = (fs::canonical(out) / "trials" / "64_0").string();
  const auto argv = nlohmann::json::parse(slurp(fs::path(run_dir) / "argv.json"));
  BOOST_TEST(argv.dump() ==
             nlohmann::json({run_dir, "64", "val_loss<=0.14", "a 0.1 b", run_dir}).dump());
  // Through a shell (a redirection): the values are positional parameters, never shell code.
  const std::string shell_out = out + "-sh";
  r = run_argv({"sweep", "--config", config.string(), "--out", shell_out, "--no-plots", "--exec",
                kProgram + " argv {run_dir} 64 {train.target} > {run_dir}/stdout.txt"},
               home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string shell_run = (fs::canonical(shell_out) / "trials" / "64_0").string();
  BOOST_TEST(nlohmann::json::parse(slurp(fs::path(shell_run) / "stdout.txt")).dump() ==
             nlohmann::json({shell_run, "64", "val_loss<=0.14"}).dump());
  // No --out: the directory is named after the hostile config file.
  r = run_argv({"sweep", "--config", config.string(), "--no-plots", "--exec",
                kProgram + " argv {run_dir} 64 && true"},
               home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(fs::exists(home / "runs" / "sweep-syn$(touch PWNED);`touch PWNED`" / "trials" /
                        "64_0" / "argv.json"));
  BOOST_TEST(no_pwned(home));
  // An unterminated quote is a one-line error before any trial.
  r = run_argv({"sweep", "--config", config.string(), "--out", (home / "q").string(), "--exec",
                kProgram + " argv {run_dir} 'oops"},
               home);
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("error: --exec: unterminated ' quote") != std::string::npos, r.err);
}

// --launcher slurm writes names into sweep.sbatch's comment, #SBATCH --output and shell lines:
// names a shell would run run nothing when bash runs the script; a newline (ending a comment or
// #SBATCH line) is refused, nothing written. Before, --out "x\ntouch PWNED;#" ran touch.
BOOST_AUTO_TEST_CASE(a_slurm_script_of_hostile_names_runs_its_trial_and_nothing_else) {
  const fs::path home = scratch() / "slurm_hostile";
  fs::create_directories(home);
  const fs::path config = write_config(home / "slurm.toml", "64");
  const std::string one_line = kHostile.substr(0, kHostile.find('\n'));
  const fs::path out = home / one_line;
  auto r = run_argv({"sweep", "--config", config.string(), "--out", out.string(), "--launcher",
                     "slurm", "--exec", kProgram + " argv {run_dir} 64"},
                    home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string script = slurp(out / "sweep.sbatch");
  std::string quoted = "\"";
  for (char c : (fs::canonical(out) / "slurm" / "%A_%a.out").string())
    quoted += std::string(c == '"' || c == '\\' ? "\\" : "") + c;
  BOOST_TEST(script.find("\n#SBATCH --output=" + quoted + "\"\n") != std::string::npos, script);
  // The array task, as SLURM would start it (bash runs the script with the task's index).
  using lbt::experiments::shell_quote;
  const int status =
      std::system(("cd " + shell_quote(home.string()) + " && SLURM_ARRAY_TASK_ID=0 bash " +
                   shell_quote((out / "sweep.sbatch").string()) + " > task.log 2>&1")
                      .c_str());
  BOOST_TEST(WEXITSTATUS(status) == 0, slurp(home / "task.log"));
  BOOST_TEST(column(out, "64_0", "status") == "reached_target");
  BOOST_TEST(no_pwned(home));

  for (const std::string& bad : {kHostile, std::string("x\ntouch PWNED;#")}) {
    const fs::path dir = home / bad;
    r = run_argv({"sweep", "--config", config.string(), "--out", dir.string(), "--launcher",
                  "slurm", "--exec", kProgram + " argv {run_dir} 64"},
                 home);
    BOOST_TEST(r.code == 2, r.err);
    std::string shown = bad;  // one error line: the newline shown as '?'
    std::replace(shown.begin(), shown.end(), '\n', '?');
    BOOST_TEST(lbt::test::error_line(r.err).find("--launcher slurm: the sweep directory " +
                                                 (fs::absolute(home) / shown).string() +
                                                 " holds a newline") != std::string::npos,
               r.err);
    BOOST_TEST(!fs::exists(dir));
  }
  r = run_argv({"sweep", "--config", config.string(), "--out", (home / "opt").string(),
                "--launcher", "slurm", "--set", "sweep.slurm_options=[\"--mem=4G\\ntouch PWNED\"]",
                "--exec", kProgram + " argv {run_dir} 64"},
               home);
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("sweep.slurm_options holds a newline") != std::string::npos, r.err);
  BOOST_TEST(no_pwned(home));
}

BOOST_AUTO_TEST_CASE(a_hanging_program_times_out_and_no_process_of_its_group_survives) {
  const fs::path dir = scratch() / "hang";
  const fs::path config = write_config(scratch() / "hang.toml", "64");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r =
      run_argv({"sweep", "--config", config.string(), "--out", dir.string(), "--no-plots", "--set",
                "sweep.trial_timeout=1", "--exec", kHang + " {run_dir} /nonexistent ignore-term"});
  BOOST_TEST(seconds_since(t0) < 15);  // 1 s, then SIGKILL after a grace of 2 s
  BOOST_TEST(r.code == 6, r.err);      // a timeout is listed with the failed trials
  BOOST_TEST(column(dir, "64_0", "status") == "timeout");
  BOOST_TEST(column(dir, "64_0", "message").find("sweep.trial_timeout = 1 s") != std::string::npos);
  const fs::path run = dir / "trials" / "64_0";
  BOOST_TEST(!alive(pid_in(run / "leader.pid")));
  BOOST_TEST(!alive(pid_in(run / "child.pid")));  // ignored SIGTERM, died of SIGKILL
  BOOST_TEST(!fs::exists(run / "process.json"));  // the group ended: nothing for a rerun
}

BOOST_AUTO_TEST_CASE(sigterm_of_a_sweep_kills_each_trial_group_and_the_printed_command_resumes) {
  const fs::path dir = scratch() / "stop";
  const fs::path config = write_config(scratch() / "stop.toml", "64, 256");
  const fs::path release = scratch() / "stop.release", log = scratch() / "stop.log";
  // Two concurrent trials, each a shell with a grandchild; --exec with quotes and spaces.
  const pid_t sweep = start_argv(
      {"sweep", "--config", config.string(), "--out", dir.string(), "--jobs", "2", "--no-plots",
       "--set", "train.seed=3", "--exec", "'" + kHang + "' {run_dir} \"" + release.string() + "\""},
      scratch(), log);
  for (const char* trial : {"64_0", "256_0"})
    BOOST_REQUIRE(wait_for_file(dir / "trials" / trial / "leader.pid", 30));
  kill(sweep, SIGTERM);
  const int status = lbt::test::wait_for(sweep, 30);
  const std::string text = slurp(log);
  BOOST_TEST_INFO("log: " << text);
  BOOST_REQUIRE(status != -1);
  BOOST_TEST(WEXITSTATUS(status) == 143);
  for (const char* trial : {"64_0", "256_0"}) {
    BOOST_TEST(!alive(pid_in(dir / "trials" / trial / "leader.pid")));
    BOOST_TEST(!alive(pid_in(dir / "trials" / trial / "child.pid")));
  }
  // The printed command, as printed (with `lbt` this build), finishes the sweep.
  const std::string hint = "continue it with: lbt ", until = " (finished trials are kept";
  const auto from = text.find(hint);
  BOOST_REQUIRE(from != std::string::npos);
  const auto begin = from + hint.size();
  const std::string command = text.substr(begin, text.find(until, begin) - begin);
  BOOST_TEST(command.find("--exec ") != std::string::npos);
  BOOST_TEST(command.find("--set train.seed=3") != std::string::npos);
  std::ofstream(release) << "go\n";
  const auto r = lbt::test::run_lbt(command);
  BOOST_REQUIRE_MESSAGE(r.code == 0, command << "\n" << r.err);
  BOOST_TEST(column(dir, "64_0", "status") == "reached_target");
  BOOST_TEST(column(dir, "256_0", "status") == "reached_target");
}

BOOST_AUTO_TEST_CASE(a_rerun_refuses_while_a_killed_sweeps_trial_group_lives) {
  const fs::path dir = scratch() / "orphan";
  const fs::path config = write_config(scratch() / "orphan.toml", "64");
  const fs::path release = scratch() / "orphan.release", log = scratch() / "orphan.log";
  const std::vector<std::string> args = {
      "sweep",      "--config",   config.string(), "--out",
      dir.string(), "--no-plots", "--exec",        kHang + " {run_dir} " + release.string()};
  const pid_t sweep = start_argv(args, scratch(), log);
  const fs::path run = dir / "trials" / "64_0";
  BOOST_REQUIRE(wait_for_file(run / "leader.pid", 30));
  kill(sweep, SIGKILL);  // no handler runs: the leader dies (PR_SET_PDEATHSIG), its child lives
  lbt::test::wait_for(sweep, 10);
  const pid_t group = pid_in(run / "leader.pid"), child = pid_in(run / "child.pid");
  BOOST_REQUIRE(alive(child));
  auto r = run_argv(args);
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("process group " + std::to_string(group)) != std::string::npos, r.err);
  BOOST_TEST(r.err.find("kill -- -" + std::to_string(group)) != std::string::npos, r.err);
  BOOST_TEST(alive(child));  // the refusal touched nothing
  kill(-group, SIGKILL);
  std::ofstream(release) << "go\n";
  r = run_argv(args);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(column(dir, "64_0", "status") == "reached_target");
}

BOOST_AUTO_TEST_CASE(non_finite_metrics_diverge_and_steps_out_of_order_fail_naming_the_line) {
  const fs::path dir = scratch() / "values";
  const fs::path config = write_config(scratch() / "values.toml", "16, 64, 256, 1024, 4096");
  const auto r =
      run_argv({"sweep", "--config", config.string(), "--out", dir.string(), "--no-plots", "--jobs",
                "2", "--exec", kProgram + " values {run_dir} {batch_size}"});
  BOOST_TEST(r.code == 6, r.err);  // the trial with steps out of order failed
  for (const char* trial : {"16_0", "64_0", "256_0"}) {
    BOOST_TEST(column(dir, trial, "status") == "diverged", trial);
    BOOST_TEST(column(dir, trial, "message") == "a non-finite metric at step 20");
  }
  BOOST_TEST(column(dir, "1024_0", "status") == "failed");
  const std::string message = column(dir, "1024_0", "message");
  BOOST_TEST(message.find("eval.jsonl line 2: step 10 after step 100") != std::string::npos,
             message);
  BOOST_TEST(column(dir, "4096_0", "status") == "reached_target");
}

// Steps are optimizer steps taken, from 0: a negative one is malformed; a target the untrained
// model meets measures nothing (S = 0 would reach the fit's log scale); evaluations past the
// trial's budget are not read, as lbt's own trial stops there (the sweep warns, naming the line).
BOOST_AUTO_TEST_CASE(steps_below_zero_a_target_met_at_step_0_and_evaluations_past_the_budget) {
  const fs::path dir = scratch() / "steps";
  const fs::path config = write_config(scratch() / "steps.toml", "16, 64, 256, 1024");
  const auto r = run_argv({"sweep", "--config", config.string(), "--out", dir.string(),
                           "--no-plots", "--exec", kProgram + " steps {run_dir} {batch_size}"});
  BOOST_TEST(r.code == 6, r.err);  // two trials failed
  BOOST_TEST(column(dir, "16_0", "status") == "failed");
  BOOST_TEST(column(dir, "16_0", "message").find("eval.jsonl line 1: step -5 is negative") !=
             std::string::npos);
  BOOST_TEST(column(dir, "64_0", "status") == "failed");
  BOOST_TEST(column(dir, "64_0", "message")
                 .find("eval.jsonl line 1: the target val_loss<=0.14 is met at step 0") !=
             std::string::npos);
  BOOST_TEST(column(dir, "256_0", "status") == "budget_exhausted");
  BOOST_TEST(column(dir, "256_0", "steps") == "2000");
  BOOST_TEST(column(dir, "256_0", "best_val_loss") == "0.4");
  const std::string warning = "evaluations past the trial's budget of 3000 steps were not read, " +
                              std::string("from line 3 (step 5000)");
  BOOST_TEST(r.err.find("[sweep] warning: 256_0: ") != std::string::npos, r.err);
  BOOST_TEST(r.err.find(warning) != std::string::npos, r.err);
  const auto summary = nlohmann::json::parse(slurp(dir / "trials/256_0/summary.json"));
  BOOST_TEST(summary.value("budget_warning", "").find(warning) != std::string::npos);
  BOOST_TEST(column(dir, "1024_0", "status") == "reached_target");
  BOOST_TEST(column(dir, "1024_0", "steps_to_target") == "10");
}

BOOST_AUTO_TEST_CASE(a_malformed_noise_line_and_a_deleted_run_directory_cost_one_trial_at_most) {
  const fs::path noisy = scratch() / "noisy";
  const fs::path config = write_config(scratch() / "noisy.toml", "16, 64");
  auto r = run_argv({"sweep", "--config", config.string(), "--out", noisy.string(), "--no-plots",
                     "--exec", kProgram + " noise {run_dir} {batch_size}"});
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.err.find("noise.jsonl: 1 line(s) skipped, the first at line 2: \"g_small_sq\"") !=
                 std::string::npos,
             r.err);
  // The good lines still give B_simple: 200 exactly (tr(Sigma) = 200, |G|^2 = 1).
  BOOST_TEST(std::stod(column(noisy, "16_0", "b_simple_avg")) == 200.0,
             boost::test_tools::tolerance(1e-6));
  r = run_argv({"sweep", "--config", config.string(), "--out", noisy.string(), "--no-plots",
                "--collect", "--exec", kProgram + " noise {run_dir} {batch_size}"});
  BOOST_TEST(r.code == 0, r.err);

  const fs::path deleted = scratch() / "deleted";
  r = run_argv({"sweep", "--config", config.string(), "--out", deleted.string(), "--no-plots",
                "--exec", kProgram + " delete {run_dir} {batch_size}"});
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(column(deleted, "16_0", "status") == "failed");
  BOOST_TEST(column(deleted, "16_0", "message").find("was deleted while it ran") !=
             std::string::npos);
  BOOST_TEST(column(deleted, "64_0", "status") == "reached_target");
}

// A program's output is any bytes: its last lines go into summary.json (UTF-8 only: the bytes
// that are not become U+FFFD) and sweep.csv (no control bytes). Before, the trial's verdict was
// lost to a JSON exception ("its run directory could not be read or written").
BOOST_AUTO_TEST_CASE(a_program_printing_bytes_that_are_not_utf8_fails_with_its_message_kept) {
  const fs::path dir = scratch() / "bytes";
  const fs::path config = write_config(scratch() / "bytes.toml", "16, 64");
  const auto r = run_argv({"sweep", "--config", config.string(), "--out", dir.string(),
                           "--no-plots", "--exec", kProgram + " bytes {run_dir} {batch_size}"});
  BOOST_TEST(r.code == 6, r.err);
  BOOST_TEST(column(dir, "16_0", "status") == "failed");
  BOOST_TEST(column(dir, "16_0", "message") ==
                 "the program exited with code 1: bad bytes \xEF\xBF\xBD\xEF\xBF\xBD here",
             column(dir, "16_0", "message"));
  BOOST_TEST(slurp(dir / "sweep.csv").find('\0') == std::string::npos);
  BOOST_TEST(column(dir, "16_0", "steps") == "");  // it evaluated nothing: not 0 steps
  BOOST_TEST(column(dir, "64_0", "status") == "reached_target");
}

// The plotting scripts (experiments/plots.hpp) take the paths a user chose as arguments of a
// child process, never through a shell: `lbt noise --out` and `lbt schedule --plot` with names a
// shell would run draw their figures and run nothing.
BOOST_AUTO_TEST_CASE(plots_of_hostile_paths_are_drawn_and_run_nothing) {
  const fs::path home = scratch() / "hostile_plots";
  fs::create_directories(home);
  const std::string config = LBT_SOURCE_DIR "/experiments/configs/synthetic_regression.toml";
  const fs::path noise_dir = home / ("noise " + kHostile);
  auto r = run_argv(
      {"noise", "--config", config, "--steps", "40", "--quiet", "--out", noise_dir.string()}, home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.err.find("plot failed") == std::string::npos, r.err);
  BOOST_TEST(fs::exists(noise_dir / "noise.png"));
  const fs::path plot = home / ("lr " + kHostile + ".png");
  r = run_argv({"schedule", "--config", config, "--steps", "50", "--plot", plot.string()}, home);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(fs::exists(plot));
  BOOST_TEST(no_pwned(home));
}
