// The scaling study (`lbt scaling`): one config trained at 1, 2, 4 ... MPI processes, each a
// `mpirun -np K lbt train` subprocess with one compute thread per rank; reports epoch time,
// throughput, speedup and efficiency against the smallest worker count (Horovod-style study,
// Sergeev & Del Balso 2018, arXiv:1802.05799, Fig. 6).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::experiments {

struct ScalingOptions {
  std::filesystem::path config;       // the TOML config every run uses
  std::vector<std::string> sets;      // --set overrides passed on to each run
  std::vector<int> workers;           // e.g. {1, 2, 4}; ascending, each >= 1
  std::int64_t steps = 200;           // optimizer steps per run (the throughput window)
  bool weak = false;                  // false: same global batch at every K (strong scaling);
                                      // true: global batch = K x the config's (same micro-batch)
  std::filesystem::path out;          // study directory: workers-K/ runs, scaling.csv, plots
  std::filesystem::path lbt;          // the lbt executable to launch
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirun_args;  // extra, e.g. {"--mca", "btl_vader_single_copy_mechanism", "none"}
  std::filesystem::path plot_script;  // python script taking CSV OUTDIR (skipped if empty/missing)
  std::vector<std::string> plot_args; // arguments before CSV OUTDIR, e.g. {"scaling"}
  std::string python = "/usr/bin/python3";
};

struct ScalingRow {
  int workers = 0;
  std::int64_t global_batch = 0, steps = 0;
  double epoch_time_s = 0.0, samples_per_s = 0.0, speedup = 0.0, efficiency = 0.0;
};

// Cores this process may run on (its CPU affinity mask).
int available_cores();

// Runs the study and writes scaling.csv (and plots when the script runs); returns the rows.
// Throws lbt::Error when a run fails, naming its log file.
std::vector<ScalingRow> run_scaling(const ScalingOptions& options);

// Throughput of a finished run directory: examples per second between its first and last
// metrics.jsonl lines (the first window, with warm-up, is left out), and its summary's steps.
ScalingRow read_scaling_run(const std::filesystem::path& run_dir);

}  // namespace lbt::experiments
