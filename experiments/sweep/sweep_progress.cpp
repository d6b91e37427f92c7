// The sweep's progress line; see sweep_progress.hpp.
#include "experiments/sweep/sweep_progress.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace lbt::experiments {
namespace {

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

}  // namespace

void print_trial_progress(const TrialResult& r, const SweepCounts& n, double elapsed) {
  const Trial& t = r.trial;
  const double eta = elapsed / std::max(1, n.done) * (n.left + n.running * 0.5);
  // Steps to the target with its bracket: not met at steps_lo, met at steps_to_target.
  const std::string steps = r.steps_to_target < 0 ? "-"
                                                  : std::to_string(r.steps_to_target) + " (" +
                                                        std::to_string(r.steps_lo) + ", " +
                                                        std::to_string(r.steps_to_target) + "]";
  const std::string B = t.adaptive ? "adaptive" : std::to_string(t.batch_size);
  std::fprintf(stderr,
               "[sweep] %-10s B=%-8s lr=%-9.4g %-16s steps_to_target=%-16s | done %d/%zu, "
               "running %zu, left %zu | elapsed %s, ETA %s\n",
               t.name.c_str(), B.c_str(), t.lr, r.status.c_str(), steps.c_str(), n.done,
               n.done + n.left + n.running, n.running, n.left, duration(elapsed).c_str(),
               duration(eta).c_str());
}

}  // namespace lbt::experiments
