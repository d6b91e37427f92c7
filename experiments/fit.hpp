// `lbt fit SWEEP_DIR`: the critical-batch fit (critical_batch.hpp) over a sweep's best.csv,
// with bootstrap intervals, Shallue et al.'s three regimes as batch-size ranges, and, when the
// trials wrote noise.jsonl, the median measured B_simple (McCandlish et al. 2018) beside
// B_crit. Writes SWEEP_DIR/fit.json atomically.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/critical_batch.hpp"
#include "experiments/lr_law.hpp"
#include "experiments/measured_fit.hpp"

namespace lbt::experiments {

struct FitOptions {
  int resamples = 2000;
  double level = 0.95;
  std::uint64_t seed = 0;
  // Regime edges: perfect scaling while E(B) <= (1 + tolerance) E_min, i.e. B <= tolerance *
  // B_crit; maximal data parallelism once S(B) <= (1 + tolerance) S_min, i.e. B >= B_crit /
  // tolerance; diminishing returns in between.
  double regime_tolerance = 0.2;
};

// Batch sizes whose best trial reached the target, from best.csv (status reached_target).
std::vector<ScalingPoint> read_best_points(const std::filesystem::path& best_csv);

// Per batch size, the seeds of the best (B, LR) that reached the target, each with its bracket
// (sweep.csv's rows marked best); a sweep written before brackets and seeds: best.csv's step.
std::vector<MeasuredPoint> read_measured_points(const std::filesystem::path& sweep_dir);

// Per batch size that reached the target, the best LR and its bracket: the geometric midpoints
// to the nearest LRs the search tried on each side (the LR itself where none was tried).
std::vector<LrPoint> read_lr_points(const std::filesystem::path& sweep_dir);

// The measured B_simple of the best trials that reached the target, from best.csv's `column`
// (b_simple_avg, b_simple_start or b_simple_at_target); trials that measured none are left out.
std::vector<double> best_trials_b_simple(const std::filesystem::path& best_csv, const char* column);

// Fits, writes fit.json and returns it. Throws lbt::Error (with a hint) when fewer than 3
// batch sizes reached the target.
nlohmann::json fit_sweep(const std::filesystem::path& sweep_dir, const FitOptions& options);

// "S_min = 1234 [1100, 1400], E_min = ..., B_crit = ..." for progress lines.
std::string format_fit_line(const nlohmann::json& fit);

}  // namespace lbt::experiments
