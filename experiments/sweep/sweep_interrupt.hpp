// Stopping and continuing a sweep. SIGINT (Ctrl-C) or SIGTERM to `lbt sweep` is forwarded once
// to its running trials, which finish their step, save a checkpoint and exit "interrupted"; the
// sweep starts no new trial, waits for them, writes sweep.csv and best.csv and exits 130/143.
// A second signal exits at once (the trials are killed with it; what they saved stays). A rerun
// continues each unfinished trial from its newest checkpoint (bit for bit: the trainer's resume)
// or, without one, runs it again from the start.
#pragma once
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "experiments/child_process.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/sweep/sweep.hpp"

namespace lbt::experiments {

// Installs the handlers (`lbt sweep`, `lbt cbs` and `lbt scaling` do; a library user may not
// want them); the first signal's message names the command and what it runs.
enum class InterruptedCommand { kSweep, kCbs, kScaling };
void install_sweep_interrupt_handlers(InterruptedCommand command = InterruptedCommand::kSweep);

// The first SIGINT/SIGTERM received since install_sweep_interrupt_handlers, or 0.
int sweep_interrupt_signal();
inline bool sweep_interrupted() {
  return sweep_interrupt_signal() != 0;
}

// Names, once, the trials still running kStopReminderAfter after the signal: the signal is passed
// once, and a program that lost it (a Python one still importing numpy can) kept the sweep
// waiting, without a word, until it ended.
inline constexpr std::chrono::seconds kStopReminderAfter{10};
class StopReminder {
 public:
  // When the loop should look again: within a second until it has seen a signal, at the
  // reminder's time after one, never once said.
  std::chrono::steady_clock::time_point next_look() const;
  // Prints the reminder when it is due (`running`: the trials' names).
  void look(const std::vector<std::string>& running);

 private:
  std::optional<std::chrono::steady_clock::time_point> seen_;  // when look() first saw a signal
  bool said_ = false;
};

// True when the sweep was interrupted and the trial ended because of it: it saved its state
// (exit 130/143), or the forwarded signal came before it could (killed by SIGINT/SIGTERM).
// Such a trial is unfinished, not failed: a rerun continues it.
bool stopped_by_interrupt(const ChildExit& exit);

// A string field of a trial's summary.json ("status", "kernels"), "" where absent or unreadable.
std::string trial_summary_text(const std::filesystem::path& trial_dir, const char* key);

// A trial's directory made ready: `resume` when the trial should resume there (`lbt train
// --resume`): it holds a checkpoint, did not fail, and ran with `threads` compute threads
// (another count would not continue bit for bit); otherwise the directory was emptied. Both
// under the trial's run.lock, `lock`, still held: pass it to the trial's lbt train
// (spawn_logged's pass_lock), which holds it on, so no other process takes the directory between.
// A ConfigError naming its holder where another process holds it (the directory untouched).
struct PreparedTrial {
  bool resume = false;
  DirLock lock;
};
PreparedTrial prepare_trial_dir(const std::filesystem::path& trial_dir, int threads);

// The `lbt sweep` command line that continues this sweep (for the interrupted message).
std::string sweep_resume_command(const SweepOptions& options, const std::filesystem::path& dir);

}  // namespace lbt::experiments
