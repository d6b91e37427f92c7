// Reading trial run directories into sweep results, and the sweep's CSV files:
// sweep.csv (one row per trial) and best.csv (per batch size, the trial with the fewest steps
// to the target: Shallue et al. 2018's steps-to-result after the metaparameter search).
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measured_fit.hpp"
#include "experiments/csv_table.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/trial_noise.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::experiments {

// Final statuses: a trial with one of these is never rerun on resume ("failed" and "timeout"
// only with --retry-failed). Anything else ("running", no summary.json) is unfinished.
bool is_final_status(const std::string& status);

struct TrialResult {
  Trial trial;
  std::string status = "pending";  // pending (no summary.json) | running | a final status
  std::int64_t steps = -1;         // the steps it ran; -1: not recorded (an empty cell)
  std::int64_t steps_to_target = -1, examples_to_target = -1;
  std::int64_t steps_lo = -1;  // reached: the target was not met at this evaluated step
  // NaN: not measured (null or absent in summary.json), an empty cell in the CSVs.
  double wall_time_s = std::numeric_limits<double>::quiet_NaN();
  double best_val_accuracy = std::numeric_limits<double>::quiet_NaN();
  double best_val_loss = std::numeric_limits<double>::quiet_NaN();
  // Their 95% intervals (summary.json's best_val_accuracy_ci95 / best_val_loss_ci95: Wilson's
  // and mean +- 1.96 sd / sqrt(n) over the validation examples); NaN where not recorded.
  TrialNoise::Interval best_val_accuracy_ci95, best_val_loss_ci95;
  std::string message;  // failed: the error; diverged: the reason
  // Why summary.json exists but could not be read ("empty", "not JSON: ..."); "" otherwise.
  // Such a trial counts as unfinished: a sweep runs it again, --collect refuses (sweep.cpp).
  std::string unreadable;
  TrialNoise noise;  // B_simple at start, at target, averaged (NaN: none measured)
  // summary.json's target_definition ("first_passage" for a program's trial) and its readings
  // (trial_readings.hpp): each one's bracket (lo, hi] (-1: not met), fluctuation and best.
  std::string definition = "first_passage";
  struct Reading {
    std::int64_t lo = -1, hi = -1;
    double fluctuation = std::numeric_limits<double>::quiet_NaN();
    double best = std::numeric_limits<double>::quiet_NaN();
  };
  std::map<std::string, Reading> readings;  // by name: ema, first_passage
};

// The readings sweep.csv records, in its column order.
inline const char* const kReadingNames[] = {"ema", "first_passage"};

// Reads `run_dir/summary.json` (missing: "pending"; unreadable: "running", i.e. unfinished). In
// an --exec sweep (`exec_trial`) only a summary lbt wrote is a result: one the program wrote
// itself (it may, while it runs) reads "running", so a trial cut short is run again.
TrialResult read_trial_result(const Trial& trial, const std::filesystem::path& run_dir,
                              bool exec_trial = false);

// The first step in `eval.jsonl` whose val_accuracy / val_loss meets `target`, or -1: an
// independent check of summary.json's steps_to_target from the raw evaluation log.
std::int64_t first_step_meeting_target(const std::filesystem::path& eval_jsonl,
                                       const trainer::Target& target);

// Rows for best.csv: per batch size, the LR search's trial with the fewest steps (ties: the
// smaller LR, never wall time: see lr_search.hpp) and the other seeds of its (B, LR); batch
// sizes with none reached get status "unreached".
struct BestRow {
  std::int64_t batch_size = 0;
  const TrialResult* best = nullptr;      // null when no trial reached the target
  std::vector<const TrialResult*> seeds;  // best first, then its (B, LR) with other seeds
  int trials = 0, reached = 0;
  int seeds_reached = 0;
  // steps_to_target's median over the seeds as lbt fit reads it (seed_steps: NaN where the
  // seeds that did not reach leave it unknown), and its min and max over those that reached.
  double steps_median = std::numeric_limits<double>::quiet_NaN();
  std::int64_t steps_min = -1, steps_max = -1;
  bool lr_at_edge = false;  // best LR is the smallest or largest tried: widen the search
};
std::vector<BestRow> best_per_batch(const std::vector<TrialResult>& results);

// A best LR's seed as the fit reads it (analysis/measured_fit.hpp): its bracket (lo, hi] where
// it met the target (lo -1: hi - 1); censored at `steps_run` where its run ended short of it
// (its budget, a prune, or a reached_target run that stopped before this reading met it;
// steps_run -1, not recorded: above every other seed); never where it diverged; nothing where
// it failed or timed out (it measured nothing). best.csv and lbt fit read one rule.
std::optional<analysis::BracketedSteps> seed_steps(const std::string& status, std::int64_t lo,
                                                   std::int64_t hi, std::int64_t steps_run);

// Per batch size, a warning when its best trial's best value of the metric (under
// the trial's target_definition) is within 2 x the metric's fluctuation near the crossing of
// the target: there the first step meeting it is a first passage of noise.
std::vector<std::string> target_noise_warnings(const std::vector<TrialResult>& results,
                                               const trainer::Target& target);

// Both files are rewritten atomically (temp + rename), so a kill never leaves half a CSV.
void write_sweep_csv(const std::filesystem::path& path, const std::vector<TrialResult>& results,
                     const std::filesystem::path& sweep_dir);
// `decisions`: the LR search's last word per batch size (the `search` column).
void write_best_csv(const std::filesystem::path& path, const std::vector<TrialResult>& results,
                    const std::filesystem::path& sweep_dir,
                    const std::map<std::int64_t, std::string>& decisions = {});

}  // namespace lbt::experiments
