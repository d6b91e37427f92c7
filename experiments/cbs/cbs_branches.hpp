// lbt cbs's branches as real `lbt train` child processes, with the sweep's trial machinery:
// each in its own process group (child_process.hpp), recorded in process.json (trial_group.hpp)
// so a rerun refuses to start while a killed run's branch still runs, continued from its own
// checkpoint on a rerun (sweep_interrupt.hpp's prepare_trial_dir), --jobs at a time.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cbs/cbs_plan.hpp"

namespace lbt::experiments {

struct BranchRunOptions {
  std::filesystem::path branches_dir;  // OUT/branches
  std::filesystem::path seals_file;    // OUT/checkpoint_seals.json: the checkpoints' seals
  std::filesystem::path lbt;           // the lbt executable
  int jobs = 1;
  bool progress = true;
};

// `lbt train`'s arguments for one branch. Its batch layout keeps the reference's micro-batch and
// accumulates k x B / micro_batch of them on one process, so k = 1 is the reference's own layout
// (with one rank) and the memory per micro-batch does not grow with k.
std::vector<std::string> branch_train_args(const Branch& branch, const ReferenceRun& reference,
                                           const std::filesystem::path& dir, int threads,
                                           bool resume);

// Runs every branch whose directory holds no final summary; returns how many ran. Stops
// starting branches after SIGINT/SIGTERM (the running ones save themselves).
int run_branches(const std::vector<Branch>& plan, const ReferenceRun& reference,
                 const BranchRunOptions& options);

struct BranchResult {
  Branch branch;
  std::string status;  // completed | diverged | failed | timeout | missing | ...
  double loss = 0.0;   // final val_loss; NaN when there is none (diverged, failed)
  std::string message;
};

BranchResult read_branch_result(const Branch& branch, const std::filesystem::path& dir);

// Whether a branch that ended so measured its outcome (completed, diverged: its loss, or
// outside any tolerance); a failed one measured nothing, and a rerun of lbt cbs runs it again.
bool measured_outcome(const std::string& status);

}  // namespace lbt::experiments
