// `lbt sweep`: a batch-size sweep to a target (Shallue et al. 2018, arXiv:1811.03600). Each
// trial of the plan (sweep_plan.hpp) is an `lbt train` child process writing a run directory
// under SWEEP_DIR/trials/<B>_<k>/; sweep.csv and best.csv are rewritten atomically after each
// trial; rerunning resumes (final trials are kept, unfinished ones continue from their
// checkpoints or are redone: sweep_interrupt.hpp, which also handles Ctrl-C). One
// sweep at a time owns the directory (dir_lock.hpp); a rerun must have the same plan (sweep.json),
// or --extend to add batch sizes.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::experiments {

struct SweepOptions {
  std::filesystem::path config_path;
  std::vector<std::int64_t> batch_sizes;  // empty: sweep.batch_sizes
  std::string target;                     // empty: the config's train.target
  int lr_trials = 0;                      // 0: sweep.lr_trials
  int jobs = 1;                           // concurrent trials; each gets cores / jobs threads
  std::filesystem::path out;              // empty: runs/sweep-<config stem>
  std::vector<std::string> sets;          // --set: sweep.* keys go to the sweep, the rest to trials
  std::string launcher = "local";         // local | slurm
  std::string exec_command;               // non-empty: trials run this program (exec_trial.hpp)
  bool submit = false;                    // slurm: run sbatch on the written script
  int trial_index = -1;                   // >= 0: run only this trial (a SLURM array task)
  std::string trial_name;                 // non-empty: run only the trial of this name
  bool retry_failed = false;              // rerun trials whose status is "failed"
  bool extend = false;                    // a rerun may add trials (new batch sizes) to the plan
  bool collect_only = false;              // only rebuild the CSVs, fit.json and plots
  bool plots = true;                      // run notebooks/lbt_sweep_plots.py at the end
  bool progress = true;                   // a progress line per finished trial on stderr
  bool check_only = false;                // validate the config and every trial's; run nothing
  std::filesystem::path lbt_binary;       // the `lbt` executable (empty: this process's)
};

struct SweepOutcome {
  std::filesystem::path dir;
  int trials = 0, ran = 0, skipped = 0, reached = 0, failed = 0;
  // "name: message" of every failed trial (crashed, not diverged); an array task: its own.
  std::vector<std::string> failed_trials;
  std::string fit_note;        // the fit's one-line result, or why it was skipped
  std::string adaptive_table;  // sweep.adaptive: adaptive.json as a short table (empty: none)
  int interrupt_signal = 0;    // SIGINT/SIGTERM stopped it (sweep_interrupt.hpp); no fit then
};

// Runs (or resumes) the sweep. Throws lbt::Error for a bad config before any trial starts.
SweepOutcome run_sweep(const SweepOptions& options);

// Runs /usr/bin/python3 notebooks/lbt_sweep_plots.py SWEEP_DIR; returns "" or a warning.
std::string make_sweep_plots(const std::filesystem::path& sweep_dir);

}  // namespace lbt::experiments
