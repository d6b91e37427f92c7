// The sweep.* key table; see sweep_keys.hpp.
#include "experiments/sweep_keys.hpp"

#include "core/config.hpp"

namespace lbt::experiments {
namespace {

std::vector<std::string> lr_search(const Config& config) {
  return {config.peek_string("sweep.lr_search", "adaptive")};
}
const KeyCondition kBySearch{{"sweep.lr_search"}, lr_search};

// The adaptive arm's rule set without the arm was taken without a word (2026-11-30 audit); read
// either way, so its defaults pass (resolved configs hold them).
std::vector<std::string> adaptive_arm(const Config& config) {
  return {config.peek_bool("sweep.adaptive", false) ? "true" : "false"};
}
const KeyCondition kByAdaptiveArm{{"sweep.adaptive"}, adaptive_arm, {}, true};

}  // namespace

const std::vector<KeySpec>& sweep_keys() {
  using enum KeyType;
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"sweep.batch_sizes", kIntList, "[]", "global batch sizes (--batch-sizes wins)", {},
       "examples"},
      {"sweep.lr_search", kString, "\"adaptive\"",
       "adaptive: from the grid, extend past an edge while the best LR sits on it, then refine around the best | grid: the grid only | log_uniform: Halton draws",
       {"adaptive", "grid", "log_uniform"}},
      {"sweep.lr_multipliers", kNumberList, "[]",
       "adaptive, grid: the starting multipliers of the prior (empty: lr_trials points log-spaced over [lr_min_factor, lr_max_factor])",
       {}, "", &kBySearch, {"adaptive", "grid"}},
      {"sweep.lr_refine_ratio", kNumber, "1.4142135623730951",
       "adaptive: refine until the best LR's neighbours are at most this ratio away (> 1)", {}, "",
       &kBySearch, {"adaptive"}},
      {"sweep.lr_max_trials", kInt, "12",
       "adaptive: at most this many LRs per batch size, the starting grid included", {}, "",
       &kBySearch, {"adaptive"}},
      {"sweep.prune", kBool, "true",
       "adaptive: later trials stop ('pruned') at the best steps-to-target of their batch size, which they can no longer beat",
       {}, "", &kBySearch, {"adaptive"}},
      {"sweep.seeds", kInt, "1",
       "run each batch size's best (B, LR) with this many seeds (train.seed + 0..N-1): best.csv gives the median and range"},
      {"sweep.lr_trials", kInt, "3", "trials per batch size (--lr-trials wins)"},
      {"sweep.lr_min_factor", kNumber, "0.25", "search range: lowest multiple of the prior"},
      {"sweep.lr_max_factor", kNumber, "4.0", "search range: highest multiple of the prior"},
      {"sweep.search_momentum", kBool, "false", "also draw 1 - momentum log-uniformly", {}, "",
       &kBySearch, {"log_uniform"}},
      {"sweep.momentum_min", kNumber, "0.8", "momentum search range, low end", {}, "", &kBySearch,
       {"log_uniform"}},
      {"sweep.momentum_max", kNumber, "0.99", "momentum search range, high end", {}, "", &kBySearch,
       {"log_uniform"}},
      {"sweep.max_examples", kInt, "0", "budget per trial in examples (0: unset)", {}, "examples"},
      {"sweep.max_steps", kInt, "0",
       "budget per trial in steps (0: unset); the smaller budget wins", {}, "steps"},
      {"sweep.eval_every_examples", kInt, "0",
       "trial evaluations at least N examples apart (0: 1 step)", {}, "examples"},
      {"sweep.eval_growth", kNumber, "1.5",
       "trial evaluations spaced geometrically (train.eval_growth); the crossing is then refined to train.target_resolution"},
      {"sweep.adaptive", kBool, "false",
       "also run, per seed, one trial whose batch follows the noise scale (train.batch_schedule = \"adaptive\", bounds the smallest and largest sweep.batch_sizes, micro_batch half the smallest, optimizer.lr and schedule.scaling of the config, evaluations every sweep.eval_every_examples / smallest batch steps); adaptive.json compares it with the fixed-batch fit"},
      {"sweep.adaptive_rule", kString, "\"b_simple\"",
       "the adaptive trials' train.batch_rule: b_simple | sqrt", {"b_simple", "sqrt"}, "",
       &kByAdaptiveArm, {"true"}},
      {"sweep.adaptive_sqrt_scale", kNumber, "0.0",
       "the adaptive trials' train.batch_sqrt_scale (sqrt rule: B = sqrt(this x B_simple))", {},
       "examples", &kByAdaptiveArm, {"true"}},
      {"sweep.trial_timeout", kNumber, "0",
       "seconds a trial may run; past it its process group gets SIGTERM, then SIGKILL, and the trial is 'timeout' (0: 7200 for an --exec program, none for lbt's own trials; < 0: none)"},
      {"sweep.slurm_time", kString, "\"02:00:00\"", "--launcher slurm: sbatch --time per trial"},
      {"sweep.slurm_cpus_per_task", kInt, "4", "--launcher slurm: sbatch --cpus-per-task"},
      {"sweep.slurm_options", kStringList, "[]",
       "--launcher slurm: extra #SBATCH lines, e.g. [\"--partition=cpu\"]"},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::experiments
