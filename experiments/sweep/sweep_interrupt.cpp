// Stopping and continuing a sweep; see sweep_interrupt.hpp. Only async-signal-safe calls in the
// handler.
#include "experiments/sweep/sweep_interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/kernel_identity.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/run_lock.hpp"
#include "experiments/sweep/exec_command.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};  // set on lbt's signal thread, read by the sweep's loop

// What the first signal prints, chosen at install (a handler may only write()): the command's
// own words (lbt cbs printed the sweep's before 2026-11-29).
constexpr char kSweepStop[] =
    "\nlbt sweep: stopping: the running trials are told to stop (lbt's save a checkpoint first; "
    "an --exec program runs again later), no new trial starts; signal again to exit at once\n";
constexpr char kCbsStop[] =
    "\nlbt cbs: stopping: the running branches are told to stop (each saves a checkpoint "
    "first), no new branch starts; signal again to exit at once\n";
constexpr char kScalingStop[] =
    "\nlbt scaling: stopping: the running measurement is told to stop, no new run starts; "
    "signal again to exit at once\n";
const char* g_stop_message = kSweepStop;
std::size_t g_stop_length = sizeof kSweepStop - 1;

void on_signal(int sig) {
  // Second signal: at once. The trials' process groups are killed with this process (their
  // leaders would die by PR_SET_PDEATHSIG, not what they started); each lbt trial keeps its
  // newest complete checkpoint, so a rerun still continues it.
  if (g_signal != 0) {
    signal_child_groups(SIGKILL);
    _exit(128 + sig);
  }
  g_signal = sig;
  // Passed on always: in a SLURM job the trials may get SIGTERM from SLURM too, and lbt's take a
  // repeat within 2 s as the same stop (trainer/interrupt.cpp); where only the sweep got it
  // (--signal=B:TERM@120, a timeout wrapper) it was the trials' only word to save themselves.
  forward_signal_to_children(sig);
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, g_stop_message, g_stop_length);
}

}  // namespace

std::chrono::steady_clock::time_point StopReminder::next_look() const {
  const auto now = std::chrono::steady_clock::now();
  if (said_) return std::chrono::steady_clock::time_point::max();
  return seen_ ? *seen_ + kStopReminderAfter : now + std::chrono::seconds(1);
}

void StopReminder::look(const std::vector<std::string>& running) {
  if (said_ || !sweep_interrupted() || running.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (!seen_) seen_ = now;
  if (now < *seen_ + kStopReminderAfter) return;
  std::string names;
  for (const std::string& name : running) names += (names.empty() ? "" : ", ") + name;
  std::cerr << "lbt sweep: " << kStopReminderAfter.count() << " s after the signal, still "
            << "waiting for " << names << " to stop (a program still starting may have lost "
            << "the signal, and it is passed once); signal again to exit at once" << std::endl;
  said_ = true;
}

std::string trial_summary_text(const fs::path& trial_dir, const char* key) {
  std::error_code ec;
  if (!fs::exists(trial_dir / "summary.json", ec)) return "";
  const auto j = nlohmann::json::parse(io::read_file(trial_dir / "summary.json"), nullptr, false);
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

namespace {

std::string trial_threads(const fs::path& trial_dir) {
  std::error_code ec;
  if (!fs::exists(trial_dir / "config.toml", ec)) return "";
  const auto keys = flatten_config(io::read_file(trial_dir / "config.toml"));
  const auto it = keys.find("train.threads");
  return it == keys.end() ? "" : it->second;
}

// A crash of the sweep (a bad access, an abort from std::terminate) takes the trials' groups
// with it, then dies of the same signal (SA_RESETHAND: the default action this time).
void on_crash(int sig) {
  signal_child_groups(SIGKILL);
  ::raise(sig);
}

void install_crash_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_sweep_interrupt_handlers(InterruptedCommand command) {
  const bool cbs = command == InterruptedCommand::kCbs;
  const bool scaling = command == InterruptedCommand::kScaling;
  g_stop_message = cbs ? kCbsStop : scaling ? kScalingStop : kSweepStop;
  g_stop_length = (cbs ? sizeof kCbsStop : scaling ? sizeof kScalingStop : sizeof kSweepStop) - 1;
  install_crash_handlers();
  // On lbt's signal thread (trainer/interrupt.hpp), else with SA_RESTART: waitpid goes on, the
  // trials' exits are what the sweep waits for.
  trainer::install_signal_handler(on_signal);
}

int sweep_interrupt_signal() {
  return g_signal;
}

bool stopped_by_interrupt(const ChildExit& exit) {
  if (g_signal == 0) return false;
  if (exit.signal == SIGINT || exit.signal == SIGTERM) return true;
  return exit.exit_code == 128 + SIGINT || exit.exit_code == 128 + SIGTERM;
}

PreparedTrial prepare_trial_dir(const fs::path& trial_dir, int threads) {
  // A trial's directory is cleared before it runs: through a link (planted in a shared sweep
  // directory) that cleared the directory it points to, outside the sweep (2026-11-30 audit).
  // trials/ itself may be a link (the trials on another disk): only trials live there.
  if (std::error_code ec; fs::is_symlink(trial_dir, ec)) {
    throw ConfigError(trial_dir.string() +
                          " is a symbolic link: the sweep clears a trial's directory before the "
                          "trial runs, and would clear what the link points to",
                      "remove the link (the sweep makes the directory again), or use a new --out");
  }
  io::create_directories(trial_dir, "trial directory");
  // The trial's run.lock, held while the directory is read and cleared (its owner line names
  // this sweep's pid as "lbt train" until the trial's lbt train writes its own): a process that
  // took the directory after the sweep looked (a resume of the trial by hand) holds the lock,
  // and this throws the ConfigError naming it before anything is removed.
  PreparedTrial prepared{false, lock_run_directory(trial_dir)};
  const auto on_these_kernels = [&] {  // read only where the rest allows a resume
    const std::string kernels = trial_summary_text(trial_dir, "kernels");  // "": before 11-29
    return kernels.empty() || lbt::same_kernels(kernels, kernel_identity().text);
  };
  prepared.resume = !trainer::list_checkpoints(trial_dir / "checkpoints").empty() &&
                    trial_summary_text(trial_dir, "status") != "failed" &&
                    trial_threads(trial_dir) == std::to_string(threads) && on_these_kernels();
  if (prepared.resume) return prepared;
  // A torn run of a killed sweep, a failed trial (--retry-failed) or one stopped under another
  // --jobs or other kernels (LBT_CPU, LBT_GEMM: it continued silently, its numbers those of
  // neither; 2026-11-29 audit): start it clean (all but the lock, held).
  for (const auto& entry : fs::directory_iterator(trial_dir))
    if (entry.path().filename() != "run.lock") fs::remove_all(entry.path());
  return prepared;
}

// Every option the sweep was given, so the command continues the same sweep (sweep.json refuses
// a rerun whose settings differ). Not --check, which runs nothing.
std::string sweep_resume_command(const SweepOptions& o, const fs::path& dir) {
  std::string cmd = "lbt sweep --config " + shell_word(o.config_path.string()) + " --out " +
                    shell_word(dir.string());
  if (!o.batch_sizes.empty()) {
    std::string sizes;
    for (auto b : o.batch_sizes) {
      if (!sizes.empty()) sizes += ',';  // not ("" or ",") + to_string: GCC 12's -Wrestrict
      sizes += std::to_string(b);        // false positive on operator+(const char*, string&&)
    }
    cmd += " --batch-sizes " + sizes;
  }
  if (!o.target.empty()) cmd += " --target " + shell_word(o.target);
  if (o.lr_trials > 0) cmd += " --lr-trials " + std::to_string(o.lr_trials);
  if (o.jobs != 1) cmd += " --jobs " + std::to_string(o.jobs);
  for (const auto& s : o.sets) cmd += " --set " + shell_word(s);
  if (o.launcher != "local") cmd += " --launcher " + shell_word(o.launcher);
  if (o.submit) cmd += " --submit";
  if (!o.exec_command.empty()) cmd += " --exec " + shell_word(o.exec_command);
  if (o.trial_index >= 0) cmd += " --trial-index " + std::to_string(o.trial_index);
  if (!o.trial_name.empty()) cmd += " --trial " + shell_word(o.trial_name);
  if (o.retry_failed) cmd += " --retry-failed";
  if (o.extend) cmd += " --extend";
  if (o.collect_only) cmd += " --collect";
  if (!o.plots) cmd += " --no-plots";
  if (!o.progress) cmd += " --quiet";
  return cmd;
}

}  // namespace lbt::experiments
