// Progress line; see progress.hpp.
#include "trainer/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace lbt::trainer {

Progress::Progress(bool enabled, std::int64_t total_steps)
    : enabled_(enabled && ::isatty(STDERR_FILENO)),
      total_(total_steps),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::int64_t step, double loss, double val_accuracy, double samples_per_s) {
  if (!enabled_) return;
  if (samples_per_s >= 0) samples_per_s_ = samples_per_s;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = step > 0 ? elapsed / step * (total_ - step) : 0.0;
  char val[32] = "  -   ";
  if (val_accuracy >= 0) std::snprintf(val, sizeof val, "%.4f", val_accuracy);
  char noise[80] = "";
  if (b_simple_ >= 0) {
    std::snprintf(noise, sizeof noise, " | B_simple now %.3g [%.3g, %.3g]", b_simple_, b_low_,
                  b_high_);
  } else if (noise_seen_) {
    std::snprintf(noise, sizeof noise, " | B_simple now: not resolved");
  }
  std::fprintf(stderr, "\rstep %lld/%lld | loss %.4f | %s %s%s | %.0f samples/s | ETA %d:%02d   ",
               static_cast<long long>(step), static_cast<long long>(total_), loss, val_label_, val,
               noise, samples_per_s_, static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  std::fflush(stderr);
  printed_ = true;
}

void Progress::set_noise_scale(double b_simple, double low, double high) {
  noise_seen_ = true;
  // Shown only when bounded: an unresolved |G|^2 says so instead of printing inf or nan.
  b_simple_ = std::isfinite(b_simple) && std::isfinite(high) ? b_simple : -1.0;
  b_low_ = low;
  b_high_ = high;
}

void Progress::finish() {
  if (enabled_ && printed_) std::fprintf(stderr, "\n");
}

}  // namespace lbt::trainer
