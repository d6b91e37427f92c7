// The scaling study (`lbt scaling`): one config trained at 1, 2, 4 ... MPI processes, each a
// `mpirun -np K lbt train` subprocess with one compute thread per rank; reports epoch time,
// throughput, speedup and efficiency against the smallest worker count (Horovod-style study,
// Sergeev & Del Balso 2018, arXiv:1802.05799, Fig. 6). The worker list runs --repeats times,
// interleaved, and ratios are taken within each repeat, because a shared machine's speed
// drifts between runs: the study reports medians with min-max, never one run. --compare runs
// several values of one config key (variants) in the same study; see scaling_compare.hpp.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "analysis/spread.hpp"

namespace lbt::experiments {

struct ScalingOptions {
  std::filesystem::path config;   // the TOML config every run uses
  std::vector<std::string> sets;  // --set overrides passed on to each run
  std::vector<int> workers;       // e.g. {1, 2, 4}; ascending, each >= 1
  std::int64_t steps = 200;       // optimizer steps per run (the throughput window)
  int repeats = 3;                // times the whole worker list runs (interleaved)
  bool weak = false;              // false: same global batch at every K (strong scaling);
                                  // true: global batch = K x the config's (same micro-batch)
  std::string compare;            // --compare KEY=V1,V2,...: variants; empty: one config
  std::filesystem::path out;      // study directory: [VARIANT/]workers-K/repeat-R/ runs, CSVs
  bool overwrite = false;         // replace a finished study there (its CSVs, plots and runs)
  std::filesystem::path lbt;      // the lbt executable to launch
  std::string mpirun = "mpirun";
  std::vector<std::string>
      mpirun_args;  // extra, e.g. {"--mca", "btl_vader_single_copy_mechanism", "none"}
  std::filesystem::path plot_script;  // python script taking CSV OUTDIR (skipped if empty/missing)
  std::string python = "/usr/bin/python3";
  // The SIGINT/SIGTERM lbt scaling received (its handlers pass it to the running run's process
  // group), or 0; checked after each run. Empty: none installed.
  std::function<int()> interrupt_signal;
};

// One run: one worker count in one repeat (a row of scaling_runs.csv).
struct ScalingRow {
  std::string variant;  // the --compare variant's tag ("overlap_comm=true"); "" without one
  int workers = 0;
  int repeat = 1;  // 1-based repeat the run belongs to
  std::int64_t global_batch = 0, steps = 0;
  double epoch_time_s = 0.0, samples_per_s = 0.0;
  double speedup = 0.0, efficiency = 0.0;  // against the smallest K of the same repeat
  // The throughput window, metrics.jsonl's first logged step to its last: samples/s is
  // window_steps x global_batch / window_s, as precise as those few steps' timing.
  std::int64_t window_steps = 0;
  double window_s = 0.0;
};

// One worker count (of one variant) over all repeats (a row of scaling.csv): medians with min
// and max.
struct ScalingSummary {
  std::string variant;
  int workers = 0, repeats = 0;
  std::int64_t global_batch = 0, steps = 0;
  double epoch_time_s = 0.0;  // the epoch time at the median samples/s
  double samples_per_s = 0.0, samples_per_s_min = 0.0, samples_per_s_max = 0.0;
  double speedup = 0.0, speedup_min = 0.0, speedup_max = 0.0;  // over the per-repeat ratios
  double efficiency = 0.0, efficiency_min = 0.0, efficiency_max = 0.0;
};

// Order of the worker list in 1-based repeat r: rotated left by r - 1, so that with
// {1, 2, 4} repeat 1 runs 1,2,4, repeat 2 runs 2,4,1, repeat 3 runs 4,1,2, repeat 4 1,2,4 ...
std::vector<int> repeat_order(const std::vector<int>& workers, int repeat);

// Repeats' spread: median [min-max] (analysis/spread.hpp).
using analysis::Spread;
using analysis::spread_of;
using analysis::spread_text;
// The tables' heading: "median [min-max] over N repeats; ", or that one run measures no spread.
std::string spread_heading(int repeats);

// Sets each run's speedup (K_ref x samples/s / samples/s of K_ref) and efficiency
// (speedup / K) against the smallest worker count K_ref among the runs of its own repeat and
// variant.
void set_speedups_per_repeat(std::vector<ScalingRow>& runs);

// Per variant (in order of first appearance in `runs`), then per worker count, ascending: median
// samples/s with min and max over repeats, epoch time at the median samples/s (a run's epoch_time_s
// x samples_per_s is its examples per epoch), and speedup/efficiency as median, min and max of the
// per-repeat ratios (computed here with set_speedups_per_repeat). Pure: takes runs in any order;
// throws lbt::Error if runs is empty.
std::vector<ScalingSummary> summarise_scaling(std::vector<ScalingRow> runs);

// scaling_runs.csv: `runs` in the order they ran, positions[i] the 1-based place of runs[i]
// in its repeat; with variant_column, a `variant` column last (old readers keep working).
std::string scaling_runs_csv(const std::vector<ScalingRow>& runs, const std::vector<int>& positions,
                             bool variant_column);
// scaling.csv: one row per summary, `cores` on each; the `variant` column as above.
std::string scaling_summary_csv(const std::vector<ScalingSummary>& rows, int cores,
                                bool variant_column);
// The one-config table: per worker count, samples/s, epoch time, speedup and efficiency.
void print_scaling_table(const std::vector<ScalingSummary>& rows);

// Runs the study, writes scaling.csv (summaries), scaling_runs.csv (one row per run), with
// --compare scaling_compare.csv (ratios against the first variant) and a `variant` column
// last in the other two, and plots when the script runs; returns the summaries. Throws
// lbt::ConfigError for bad options or a variant's config that `lbt train` would refuse at
// some worker count (before any run), and lbt::Error when a run fails, naming its log file.
std::vector<ScalingSummary> run_scaling(const ScalingOptions& options);

// Throughput of a finished run directory: examples per second between its first and last
// metrics.jsonl lines (the first window, with warm-up, is left out), and its summary's steps.
ScalingRow read_scaling_run(const std::filesystem::path& run_dir);

}  // namespace lbt::experiments
