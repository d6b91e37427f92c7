// The live progress line on a terminal: step, loss, validation accuracy (val_mse for
// regression), samples/s, ETA.
// Silent when stderr is not a terminal (logs and CI stay clean).
#pragma once
#include <chrono>
#include <cstdint>

namespace lbt::trainer {

class Progress {
 public:
  Progress(bool enabled, std::int64_t total_steps);
  // val_accuracy < 0: not evaluated yet; samples_per_s < 0: keep the last value.
  void update(std::int64_t step, double loss, double val_accuracy, double samples_per_s);
  // Shows B_simple [low, high] (the gradient noise scale) from now on; NaN hides it.
  void set_noise_scale(double b_simple, double low, double high);
  // The validation number's name on the line: "val_acc" (default) or "val_mse".
  void set_val_label(const char* label) { val_label_ = label; }
  void finish();

 private:
  bool enabled_;
  std::int64_t total_;
  double samples_per_s_ = 0.0;
  std::chrono::steady_clock::time_point start_;
  bool printed_ = false;
  double b_simple_ = -1.0, b_low_ = 0.0, b_high_ = 0.0;
  const char* val_label_ = "val_acc";
  bool noise_seen_ = false;  // a noise report arrived (so "not resolved" can be said)
};

}  // namespace lbt::trainer
