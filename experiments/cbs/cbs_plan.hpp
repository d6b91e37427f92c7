// lbt cbs's plan: the reference run it reads and the branches it runs from its checkpoints
// (Merrill et al. 2025, arXiv:2505.23971): at each chosen step S, for each multiplier k and
// each data-order seed, a continuation at global batch k x B for a fixed number of examples
// (so k x B runs 1/k of the steps), the LR rescaled by schedule.scaling.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cbs/branch_length.hpp"

namespace lbt::experiments {

struct CbsOptions {
  std::filesystem::path run_dir;          // the finished reference run
  std::vector<std::int64_t> steps;        // checkpoint steps to branch from
  std::vector<std::int64_t> multipliers;  // k; 1 (the reference branch) is added if missing
  double tolerance = -1.0;                // < 0: measured (cbs_estimate.hpp)
  std::int64_t examples = 0;              // per branch; 0: measured per step (branch_length.hpp)
  int seeds = 3;                          // data-order seeds per (step, k)
  int jobs = 1;
  std::string scaling;               // "": the reference's schedule.scaling
  std::filesystem::path out;         // "": RUN_DIR/cbs
  std::filesystem::path lbt_binary;  // "": this executable
  bool progress = true;
  bool plots = true;
};

// What the plan needs of the reference run, read from RUN_DIR/config.toml.
struct ReferenceRun {
  std::filesystem::path dir, config_path;
  std::int64_t global_batch = 0;  // B
  std::int64_t micro_batch = 0;   // resolved: B = world_size x micro_batch x accum_steps
  int world_size = 1;
  std::int64_t seed = 0;            // train.seed (data-order seed 0 is the reference's own)
  std::int64_t train_examples = 0;  // the training split's size
  std::string scaling;              // the rule the branches apply
  std::vector<std::int64_t> checkpoint_steps;  // steps with a checkpoint, ascending
  std::vector<EvalPoint> eval_curve;  // eval.jsonl's evaluations (not refinements), in order
};

// Reads and checks RUN_DIR: a ConfigError (exit 2) when it is not a run directory or its config
// does not resolve, as `lbt train --resume` says it.
ReferenceRun read_reference_run(const std::filesystem::path& run_dir,
                                const std::string& scaling_override);

struct Branch {
  std::int64_t step = 0, multiplier = 1;
  int seed_index = 0;                                      // 0: the reference's own data order
  std::int64_t order_seed = 0;                             // train.order_seed
  std::int64_t global_batch = 0, steps = 0, examples = 0;  // steps: the branch's own
  std::string name;                                        // step<S>_k<k>_s<seed_index>
};

// The branches, in the order they run (step, seed, k). Refuses before any branch runs: a step
// without a checkpoint (naming those with one), a batch larger than the training set, a
// branch shorter than one step, seeds < 1, an empty list.
std::vector<Branch> make_cbs_plan(const CbsOptions& options, const ReferenceRun& reference);

// The least number of steps at k = 1 that is a whole number of steps at every multiplier (their
// least common multiple); 0 where it is longer than kMaxSteps at the largest multiplier, the
// longest branch a measured length runs (multipliers such as 1, 3, 5, 7, 11: 1155 steps).
std::int64_t steps_in_common(const std::vector<std::int64_t>& multipliers);

// The examples per branch from the checkpoint at `step`: options.examples, or measured from the
// reference's loss noise around it (branch_length.hpp), rounded up to a whole number of steps at
// every multiplier (steps_in_common x B), so every branch trains the same examples.
BranchLength branch_length(const CbsOptions& options, const ReferenceRun& reference,
                           std::int64_t step);

}  // namespace lbt::experiments
