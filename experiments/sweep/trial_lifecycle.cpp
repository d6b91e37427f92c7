// A trial's time limit and the sweep's own summaries; see trial_lifecycle.hpp.
#include "experiments/sweep/trial_lifecycle.hpp"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/io.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

constexpr double kExecDefaultTimeout = 7200;  // sweep.slurm_time's default, 02:00:00

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
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
  io::atomic_write(run_dir / "summary.json", s.dump(2) + "\n");
}

}  // namespace lbt::experiments
