// `lbt fit SWEEP_DIR`'s files: reads what a sweep measured from its best.csv, sweep.csv and the
// trials' noise.jsonl, fits it with analysis/sweep_fit.hpp (the one fit lbt fit, lbt plan and
// the Python module share), and writes SWEEP_DIR/fit.json atomically.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/sweep_fit.hpp"

namespace lbt::experiments {

// Batch sizes whose best trial reached the target, from best.csv (status reached_target).
std::vector<analysis::ScalingPoint> read_best_points(const std::filesystem::path& best_csv);

// Per batch size, the seeds of the best (B, LR) that reached the target, each with its bracket
// (sweep.csv's rows marked best); a sweep written before brackets and seeds: best.csv's step.
// `reading` (ema, first_passage): that reading's brackets (sweep.csv's READING_steps_lo/hi) of
// the same trials; empty where the sweep did not record it.
std::vector<analysis::MeasuredPoint> read_measured_points(const std::filesystem::path& sweep_dir,
                                                          const std::string& reading = "");

// Per batch size that reached the target, the best LR and its bracket: the geometric midpoints
// to the nearest LRs the search tried on each side (the LR itself where none was tried).
std::vector<analysis::LrPoint> read_lr_points(const std::filesystem::path& sweep_dir);

// The measured B_simple of the best trials that reached the target, from best.csv's `column`
// (b_simple_avg, b_simple_start or b_simple_at_target), and lower bounds where a trial's is
// unresolved (the cell empty, its _lo set); trials that measured none are left out.
analysis::BSimpleReadings best_trials_b_simple(const std::filesystem::path& best_csv,
                                               const char* column);

// Everything the fit reads from SWEEP_DIR. Throws lbt::Error (with a hint) when fewer than 3
// batch sizes reached the target.
analysis::SweepMeasurements read_sweep_measurements(const std::filesystem::path& sweep_dir);

// Reads, fits (analysis::fit_measurements), writes fit.json and returns it.
nlohmann::json fit_sweep(const std::filesystem::path& sweep_dir,
                         const analysis::FitOptions& options);

// The sweep's own refit after it rewrote its CSVs: fit.json written, or, where no fit can be made
// (`why` says why), an earlier one removed, as it would describe other data (the plots drew it
// over the new points: 2026-11-29 audit). Returns the fit, null when skipped. A fit.json that
// cannot be written is removed as well, and the error thrown.
nlohmann::json refit_sweep(const std::filesystem::path& sweep_dir, std::string& why);

}  // namespace lbt::experiments
