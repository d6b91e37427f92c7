// A trial's time limit and the sweep's own summaries; see trial_lifecycle.hpp.
#include "experiments/sweep/trial_lifecycle.hpp"

#include <signal.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/io.hpp"
#include "experiments/json_file.hpp"
#include "experiments/sweep/exec_trial.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

constexpr double kExecDefaultTimeout = 7200;  // sweep.slurm_time's default, 02:00:00

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// Why a failed trial left no last lines: a full disk empties its train.log (its error could
// not be written there either: "exited with code 1" was all a sweep said; 2026-11-29 audit),
// and the sweep, on the same disk, can see that. Below 1 MiB or no inode left reads as full.
std::string empty_log_reason(const fs::path& dir) {
  struct statvfs disk {};
  if (::statvfs(dir.c_str(), &disk) == 0) {
    const double free_kib = static_cast<double>(disk.f_bavail) * disk.f_frsize / 1024;
    if (free_kib < 1024 || (disk.f_files > 0 && disk.f_favail == 0)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "its train.log is empty and the disk holding it is full (%.0f KiB, %llu "
                    "inodes free): free space, then rerun with --retry-failed",
                    free_kib, static_cast<unsigned long long>(disk.f_favail));
      return text;
    }
  }
  return "its train.log is empty";
}

}  // namespace

double effective_trial_timeout(double configured, bool exec) {
  if (configured > 0) return configured;
  return configured == 0 && exec ? kExecDefaultTimeout : 0;
}

TrialClock start_trial_clock(double limit_s) {
  TrialClock c;
  c.limit_s = limit_s;
  if (limit_s > 0) c.deadline = std::chrono::steady_clock::now() + seconds(limit_s);
  return c;
}

TrialClockPoint enforce_trial_clock(pid_t pgid, TrialClock& c) {
  const auto now = std::chrono::steady_clock::now();
  if (!c.timed_out && now >= c.deadline) {
    c.timed_out = true;
    c.kill_at = now + seconds(std::clamp(c.limit_s / 10, 2.0, 30.0));
    ::kill(-pgid, SIGTERM);
  }
  if (c.timed_out && now >= c.kill_at) {
    ::kill(-pgid, SIGKILL);
    c.kill_at = TrialClockPoint::max();  // once; the exit comes next
  }
  return c.timed_out ? c.kill_at : c.deadline;
}

std::string timeout_message(const TrialClock& c) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", c.limit_s);
  return std::string("ran past sweep.trial_timeout = ") + limit +
         " s; its process group was stopped (SIGTERM, then SIGKILL)";
}

void write_trial_verdict(const Trial& t, const fs::path& run_dir, const std::string& status,
                         const std::string& error) {
  fs::create_directories(run_dir);
  const nlohmann::json s = {{"status", status},
                            {"error", error},
                            {"global_batch", t.batch_size},
                            {"written_by", "lbt sweep"}};
  io::atomic_write(run_dir / "summary.json", json_text_of_output(s));
}

TrialResult settle_trial(const Trial& t, const fs::path& dir, const ChildExit& e,
                         const TrialClock& clock, const trainer::Target* program_target) {
  const bool exec = program_target != nullptr;  // a program's summary is lbt's only once written
  if (clock.timed_out) {
    write_trial_verdict(t, dir, "timeout", timeout_message(clock));
    return read_trial_result(t, dir, exec);
  }
  if (!fs::is_directory(dir)) {
    write_trial_verdict(t, dir, "failed",
                        "its run directory " + dir.string() + " was deleted while it ran (a " +
                            "trial may only add files there)");
    return read_trial_result(t, dir, exec);
  }
  // A program stopped by the sweep's forwarded signal is unfinished: a rerun redoes it. So is
  // one that caught it and ended on its own (exit 0, or its handler's error) short of the target
  // (2026-11-29 audit: one that exited 0 read budget_exhausted, and no rerun ran it again).
  const bool stopped = stopped_by_interrupt(e) || (exec && sweep_interrupted());
  if (exec && !stopped_by_interrupt(e)) {
    const std::string warning =
        write_exec_summary(t, dir, *program_target, e, dir / "program.log", stopped);
    if (!warning.empty()) std::fprintf(stderr, "[sweep] warning: %s\n", warning.c_str());
  }
  TrialResult r = read_trial_result(t, dir, exec);
  // A child that ended without a final summary crashed (or its config failed before the run
  // directory existed): record that as "failed" with the log's last lines, so it is final.
  // "interrupted" (the trial saved its state on SIGINT/SIGTERM, or the sweep's forwarded
  // signal ended it) is unfinished, not failed: a rerun continues it.
  if (!is_final_status(r.status) && r.status != "interrupted" && !stopped) {
    const std::string why = exit_text(e);
    const std::string log = tail_lines(dir / "train.log", 3);
    write_trial_verdict(t, dir, "failed", why + ": " + (log.empty() ? empty_log_reason(dir) : log));
    r = read_trial_result(t, dir, exec);
  }
  if (stopped && !is_final_status(r.status)) r.status = "interrupted";
  return r;
}

std::optional<ErrorLines> shared_failure(const ChildExit& e, const fs::path& dir) {
  if (e.signal != 0 || e.exit_code != 2) return std::nullopt;
  return lbt_error_lines(dir / "train.log");
}

ConfigError shared_failure_error(const std::string& trial_name, const ErrorLines& failure) {
  const std::string what = "trial " + trial_name + " failed before training on what every " +
                           "trial shares, so the sweep stopped: " + failure.error;
  const std::string hint = (failure.hint.empty() ? std::string("fix that") : failure.hint) +
                           "; then rerun: the same command continues this sweep, other " +
                           "settings need a new --out";
  return ConfigError(what, hint);
}

}  // namespace lbt::experiments
