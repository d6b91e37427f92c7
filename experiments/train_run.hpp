// One training run from a config: builds communicator, data, model, optimizer and schedule,
// writes the run directory (rank 0), trains, and records the outcome in summary.json.
// `lbt train` calls it once; sweeps call it once per trial.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "schedules/from_config.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

enum class Resume {
  kNo,        // a fresh run (refuses a directory that already holds one, unless overwrite)
  kAuto,      // continue from `out`'s newest checkpoint when there is one, else start fresh
  kRequired,  // continue from `out`'s newest checkpoint; error when there is none
};

// What a per-step probe (e.g. `lbt noise`'s Hessian-weighted B_noise) may use; it runs at the
// top of a step, before any gradient work, on this rank's data.
struct ProbeContext {
  nn::Model& model;
  const data::Splits& data;
  const trainer::TrainConfig& config;
  trainer::RunDirectory* run_dir;  // rank 0 only
};

struct RunOptions {
  std::filesystem::path out;  // empty: runs/<config stem>-<timestamp>
  bool overwrite = false;
  bool progress = true;  // live line on a terminal
  Resume resume = Resume::kNo;
  using Probe = std::function<void(std::int64_t step, ProbeContext& context)>;
  Probe probe;                    // empty: none (noise.hessian.every > 0 adds the B_noise probe)
  std::string noise_layout_note;  // why the batch layout is what it is (lbt noise chose it)
  bool noise_report = false;      // lbt noise: its report gives the method and layout
  // lbt noise measures a window of a run: a warmup longer than it is a note there.
  schedules::WarmupPastRun warmup_past_run = schedules::WarmupPastRun::kError;
  // A target the untrained model meets is refused (steps to it measure nothing); lbt noise,
  // which reads no steps to a target, lets it through.
  bool refuse_target_met_at_start = true;
  // Called on every rank after each checkpoint is written, with the loop's state (tests: an
  // adaptive batch's accumulation count rank by rank). Empty: nothing.
  std::function<void(const trainer::LoopState& state)> after_checkpoint;
};

struct RunResult {
  std::filesystem::path run_dir;
  trainer::TrainOutcome outcome;
  std::int64_t val_examples = 0;  // the validation split's size: the metrics' resolution
  bool regression = false;        // float targets: val_mse and val_r2, no accuracy
  std::int64_t log_every = 0;     // the steps of a metrics.jsonl window (outcome's timings)
  // The flat parameters after the last step (every rank holds the same), for equivalence
  // tests and callers that keep the model; checkpoints are the durable form.
  std::vector<float> final_params;
};

// Compute threads per rank when train.threads is 0: the cores this task was given
// (task_cores(): Slurm's count, else its affinity mask), at most the machine's cores over the
// ranks on it. A process held to fewer cores than the machine has (taskset, a cgroup cpuset,
// mpirun's --bind-to core) runs that many threads, not one per core it cannot use.
int default_threads(int world_size);
// The rule: max(1, min(task_cores, machine_cores / local_ranks)).
int threads_per_rank(int task_cores, int machine_cores, int local_ranks);
// train.threads as configured (0: default_threads), with a warning on stderr where `report`
// and the ranks on this machine times the threads pass its cores.
int run_threads(int configured, int world_size, bool report);

// Throws lbt::Error for bad config or data; a failure after the run directory exists is
// recorded there as status "failed" (with the message) before the error propagates.
// Runs on the process-wide communicator (comm::process_communicator, backend from comm.backend).
RunResult run_training(Config& config, const RunOptions& options);

// Runs on `comm` (tests compare a world of K with a local run in the same process). After the
// parameter broadcast every rank checks that it holds rank 0's parameters (CommError if not).
RunResult run_training(Config& config, const RunOptions& options, comm::Communicator& comm);

// Where the run writes: --out, or runs/<config stem>-<timestamp>.
std::filesystem::path run_directory_path(const RunOptions& options, const Config& config);

}  // namespace lbt::experiments
