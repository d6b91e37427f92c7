// The plan of a batch-size sweep (Shallue et al. 2018, arXiv:1811.03600, sec. 3): for each
// global batch B, an LR search around the prior lr(B) = optimizer.lr * rule(B / reference_batch)
// of schedule.scaling and schedule.reference_batch (the trainer's own rule, so a trial's peak LR
// is the schedule's: the trial keeps the rule and gets optimizer.lr = prior multiplier x base),
// on a grid of multipliers or quasi-random (Halton) log-uniform draws, each trial a trainer
// run with --set overrides and a step budget derived from sweep.max_examples / max_steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/sweep/lr_search.hpp"

namespace lbt::experiments {

// The [sweep] section of a config (keys registered with defaults and docs, like the trainer's).
struct SweepSettings {
  std::vector<std::int64_t> batch_sizes;  // global batch sizes B
  std::string scaling = "none";           // schedule.scaling: none | linear | sqrt
  std::int64_t reference_batch = 128;     // schedule.reference_batch, resolved
  std::string lr_search = "adaptive";     // adaptive (lr_search.hpp) | grid | log_uniform
  std::vector<double> lr_multipliers;     // adaptive, grid: the starting multipliers of the prior
  LrSearchOptions search;                 // adaptive: refinement ratio, trials cap, pruning
  int seeds = 1;                          // each batch size's best (B, LR) with this many seeds
  std::int64_t base_seed = 0;             // train.seed: seed k of a trial is base_seed + k
  int lr_trials = 3;                      // trials per batch size
  double lr_min_factor = 0.25, lr_max_factor = 4.0;  // search range around the prior
  bool search_momentum = false;  // log_uniform: also draw 1 - momentum log-uniformly
  double momentum_min = 0.8, momentum_max = 0.99;
  std::int64_t max_examples = 0, max_steps = 0;  // budget per trial: the smaller of the set ones
  std::int64_t eval_every_examples = 0;          // evaluations at least N examples apart ...
  double eval_growth = 1.5;                      // ... and spaced geometrically (train.eval_growth)
  double trial_timeout = 0;             // seconds (trial_lifecycle.hpp: 0 the default, < 0 none)
  std::string slurm_time = "02:00:00";  // --launcher slurm: sbatch --time per array task
  std::int64_t slurm_cpus_per_task = 4;
  std::vector<std::string> slurm_options;  // extra #SBATCH lines
  bool adaptive = false;                   // sweep.adaptive: one adaptive trial per seed
  std::string adaptive_rule = "b_simple";  // its train.batch_rule
  double adaptive_sqrt_scale = 0.0;        // its train.batch_sqrt_scale
  std::string target;                      // train.target of the trials
  double base_lr = 0.1;                    // optimizer.lr
};

// Reads sweep.* (plus optimizer.lr, train.target, schedule.scaling and reference_batch) from
// `config` and validates them.
// `batch_sizes` and `lr_trials` from the command line win over the config when set (> 0).
SweepSettings read_sweep_settings(Config& config, const std::vector<std::int64_t>& batch_sizes,
                                  int lr_trials, const std::string& target);

struct Trial {
  int index = 0;                   // position in the plan (the SLURM array index)
  std::string name;                // "<B>_<k>": the directory under trials/
  std::int64_t batch_size = 0;     // 0: an adaptive trial (sweep.adaptive)
  bool adaptive = false;           // the batch follows the noise scale; not in the fit
  int k = 0;                       // trial number within this batch size
  double lr = 0.0;                 // the peak LR at B: base_lr x multiplier x rule(B / reference)
  double multiplier = 1.0;         // of the prior: the trial's optimizer.lr is base_lr x multiplier
  double momentum = -1.0;          // < 0: not searched (the config's value is used)
  int seed = 0;                    // 0: the LR search's trial; k > 0: train.seed = base_seed + k
  std::int64_t prune_at_step = 0;  // > 0: stops as "pruned" when not at the target by then
  std::int64_t steps = 0;          // train.steps
  std::int64_t eval_every = 0;     // train.eval_every
  std::vector<std::string> overrides;  // --set assignments that make this trial
};

// Van der Corput radical inverse of `index` (>= 1) in `base`: the Halton sequence's coordinate.
double halton(std::uint64_t index, std::uint64_t base);

// The LR prior at batch B.
double lr_prior(const SweepSettings& s, std::int64_t batch_size);

// A trial's train.steps at batch B: the smaller of sweep.max_examples / B (rounded up) and
// sweep.max_steps, of those set; at least 1. A schedule that decays to the end of the run decays
// over it, so lbt plan gives a run at B the same.
std::int64_t trial_steps(std::int64_t max_examples, std::int64_t max_steps, std::int64_t B);

// The trial at batch B with LR multiplier `multiplier` of the prior (the plan's index is set by
// the caller).
Trial make_trial(const SweepSettings& s, std::int64_t batch_size, int k, double multiplier,
                 double momentum = -1.0, int seed = 0, std::int64_t prune_at_step = 0);

// Seed `seed`'s adaptive trial "adaptive_<seed>" (sweep.adaptive): the batch follows the noise
// scale between the smallest and largest batch sizes, at the config's LR and schedule.scaling.
Trial make_adaptive_trial(const SweepSettings& s, int seed);

// The starting plan: every batch size's grid (or Halton draws), then the adaptive trials. The
// adaptive search and the seeds add trials as results come in (sweep_search.hpp).
std::vector<Trial> make_plan(const SweepSettings& s);

}  // namespace lbt::experiments
