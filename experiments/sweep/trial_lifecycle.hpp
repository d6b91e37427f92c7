// A running trial's time limit (sweep.trial_timeout), what its end means for its result, and
// the summaries the sweep writes itself for a trial that could not write its own: `timeout`, or
// `failed` (crashed, its run directory deleted, its files unreadable). A trial past its limit gets
// SIGTERM on its process group, then SIGKILL after a grace of a tenth of the limit (2 s to 30 s):
// time to flush, never a hang.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "experiments/child_process.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::experiments {

using TrialClockPoint = std::chrono::steady_clock::time_point;

// sweep.trial_timeout as it applies: > 0 as set; 0 (the default): 7200 s for an --exec program
// (sweep.slurm_time's default, the limit a SLURM array task gets), none for lbt's own trials,
// whose step budget and divergence check end them; < 0: none. Returns 0 for none.
double effective_trial_timeout(double configured, bool exec);

struct TrialClock {
  double limit_s = 0;  // 0: none
  TrialClockPoint deadline = TrialClockPoint::max(), kill_at = TrialClockPoint::max();
  bool timed_out = false;
};

TrialClock start_trial_clock(double limit_s);

// Signals the group `pgid` when its trial is past its deadline (SIGTERM) or past the grace after
// it (SIGKILL); returns the next time the clock needs a look (max: never).
TrialClockPoint enforce_trial_clock(pid_t pgid, TrialClock& clock);

// run_dir/summary.json with `status` (failed, timeout) and `error`, written by the sweep. Makes
// the directory again when the trial deleted it.
void write_trial_verdict(const Trial& trial, const std::filesystem::path& run_dir,
                         const std::string& status, const std::string& error);

// The verdict of a trial past its limit.
std::string timeout_message(const TrialClock& clock);

// A trial's result once its process ended: its own summary.json, or the sweep's verdict where it
// could not write one (timeout; failed: its directory deleted, or it ended without a final
// summary, with its log's last lines). A program's (--exec; `program_target`, else nullptr)
// summary is first written from its output. Stopped by the sweep's forwarded signal, an
// unfinished trial is "interrupted": a rerun continues it.
TrialResult settle_trial(const Trial& trial, const std::filesystem::path& run_dir,
                         const ChildExit& exit, const TrialClock& clock,
                         const trainer::Target* program_target);

// What an lbt trial failed on where every trial would fail alike: it exited 2 (a ConfigError)
// although the sweep had checked every trial's config before the first, so the cause is the
// machine's, found only by the trial's own program (no usable GPU, a build without CUDA). Not
// exit 4 (a DeviceError): a GPU out of memory at one batch size is that trial's. Its `error:`
// and `hint:` lines from train.log; nullopt for any other ending (a signal, another exit code,
// no error line).
std::optional<ErrorLines> shared_failure(const ChildExit& exit,
                                         const std::filesystem::path& run_dir);

// What the sweep exits with (2) after the shared failure of trial `trial_name`: its error and
// hint, and how to go on.
ConfigError shared_failure_error(const std::string& trial_name, const ErrorLines& failure);

}  // namespace lbt::experiments
