// `lbt noise`: train with the online noise estimator on, measure the Hessian-weighted B_noise at
// requested steps, and report B_simple with 95% intervals for both estimators at those steps
// (McCandlish, Kaplan, Amodei 2018, arXiv:1812.06162: B_crit ~ B_noise, B_simple its proxy).
#pragma once
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/train_run.hpp"

namespace lbt::experiments {

struct NoiseRunOptions {
  RunOptions run;
  std::int64_t steps = 0;              // 0: the config's budget
  std::vector<std::int64_t> at_steps;  // report (and probe B_noise) at these steps
};

struct NoiseAtStep {
  std::int64_t requested = 0, measured = -1;  // measured: last noise.jsonl step <= requested
  std::string estimator;                      // two_batch | per_example | hessian
  // "now": over the last noise.window_steps steps; "ema": averaged over training. NaN where
  // not resolved (|G|^2 within noise of 0): a NaN ci_high with a finite ci_low is unbounded.
  double b_simple = 0.0, ci_low = 0.0, ci_high = 0.0;
  double b_simple_ema = 0.0, ema_low = 0.0, ema_high = 0.0;
  double b_noise = 0.0;  // hessian rows only (their ci_low/ci_high are B_noise's interval)
  // hessian rows: b_simple is B_simple on the probe's own small batches, with this interval
  double same_low = NAN, same_high = NAN;
  // Why a measured estimate has no interval at all: its denominator's or numerator's estimate
  // lies below 0, which no positive value fits ("|G|^2 < 0"; "" otherwise), for "now", "ema"
  // and B_noise (hessian rows). Without it the row would read as not yet measured.
  std::string why_none, ema_why_none, b_noise_why_none;
};

struct NoiseRunResult {
  RunResult run;
  std::vector<NoiseAtStep> rows;
  double final_b_simple = NAN, final_low = NAN, final_high = NAN;  // "now", at the end
  std::int64_t final_window_samples = 0;  // the measurements in that "now"'s window
  // The last Hessian probe's B_noise and 95% interval (NaN where none ran or it is unresolved).
  double final_b_noise = NAN, b_noise_low = NAN, b_noise_high = NAN;
  std::int64_t b_noise_step = -1;
  std::int64_t last_step = 0;  // the last measurement's
  std::int64_t window_steps = 0;
  std::string recommendation;         // one sentence
  std::string method, method_reason;  // noise.jsonl's method line: what ran and why
  std::string layout_note;            // set when lbt noise chose the micro-batch layout
  std::string past_end_note;          // set when --at-steps names steps after the run's last
};

NoiseRunResult run_noise(Config& config, const NoiseRunOptions& options);
// Reads every key run_noise reads (noise on unless set), for `lbt noise --check`; refuses on a
// device what run_noise refuses there (the B_noise probe at `at_steps` or every N steps).
void check_noise_config(Config& config, const std::vector<std::int64_t>& at_steps);

// Reads a run directory's noise.jsonl: the last measurement at or before each of `at_steps`
// per estimator (result.rows), the headline (the last "now" B_simple) and the recommendation
// from it, the method line.
void read_noise_file(const std::filesystem::path& run_dir,
                     const std::vector<std::int64_t>& at_steps, NoiseRunResult& result);

// The table printed by `lbt noise` (rows, then the recommendation).
std::string format_noise_report(const NoiseRunResult& result);

}  // namespace lbt::experiments
