// A trial's gradient noise scale from its noise.jsonl, as McCandlish et al. 2018 (Table 1)
// report it: at the start of training, at the step the target was reached, and averaged over
// training. Values are the "now" B_simple of each record (noise/gradient_noise.hpp); a record
// where it is not resolved is a lower bound (its interval's lower end). Start (the first
// record) and at-target (the last at or before the target step) carry their record's 95%
// interval, NaN with its lower end where unresolved; the average is the median over records
// (which are not independent draws: a trend, overlapping windows), NaN with a lower bound in
// averaged_ci95.lo where the unresolved ones leave it unknown (a program's trial's average is
// a ratio of means, with its Fieller interval: exec_trial.hpp). Records that never bounded
// B_simple above 0 leave averaged_ci95.lo = 0: measured, resolved nothing.
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace lbt::experiments {

struct TrialNoise {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  struct Interval {
    double lo = kNone, hi = kNone;  // NaN: not recorded
  };
  double start = kNone;      // the first record's value (NaN: unresolved, or none)
  double at_target = kNone;  // the last record's at or before the target step
  double averaged = kNone;   // the median over the records, where known
  Interval start_ci95, at_target_ci95, averaged_ci95;
  int records = 0;  // resolved records read
};

// An interval written as `key: [lo, hi]` in a JSON object (a noise record's b_simple_ci95, a
// summary's best_val_loss_ci95): NaN where absent, malformed, or a bound is null (not resolved).
TrialNoise::Interval read_interval(const nlohmann::json& object, const char* key);

// Reads run_dir/noise.jsonl (the two_batch estimator when present, else per_example; the last
// record per step wins). `steps_to_target` < 0: at_target is NaN.
TrialNoise read_trial_noise(const std::filesystem::path& run_dir, std::int64_t steps_to_target);

// The median of a trial's resolved Hessian-weighted B_noise probes (noise.jsonl lines with
// estimator "hessian": noise.hessian.every, McCandlish et al. eq. 2.8); NaN where none.
double read_trial_b_noise(const std::filesystem::path& run_dir);

// read_trial_b_noise of each best trial that reached the target (best.csv's run_dir column,
// relative to the sweep directory), where it is finite.
std::vector<double> best_trials_b_noise(const std::filesystem::path& sweep_dir);

}  // namespace lbt::experiments
