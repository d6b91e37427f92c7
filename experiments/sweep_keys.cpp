// The sweep.* key table; see sweep_keys.hpp.
#include "experiments/sweep_keys.hpp"

#include "core/config.hpp"

namespace lbt::experiments {
namespace {

std::vector<std::string> lr_search(const Config& config) {
  return {config.peek_string("sweep.lr_search", "grid")};
}
const KeyCondition kBySearch{{"sweep.lr_search"}, lr_search};

}  // namespace

const std::vector<KeySpec>& sweep_keys() {
  using enum KeyType;
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"sweep.batch_sizes", kIntList, "[]", "global batch sizes (--batch-sizes wins)", {},
       "examples"},
      {"sweep.lr_search", kString, "\"grid\"", "grid, or log_uniform (Halton draws)",
       {"grid", "log_uniform"}},
      {"sweep.lr_multipliers", kNumberList, "[]",
       "grid: multipliers of the prior (empty: lr_trials points log-spaced over [lr_min_factor, lr_max_factor])",
       {}, "", &kBySearch, {"grid"}},
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
       "evaluate every N examples (0: only evals_per_trial counts)", {}, "examples"},
      {"sweep.evals_per_trial", kInt, "50", "at most this many evaluations per trial budget"},
      {"sweep.slurm_time", kString, "\"02:00:00\"", "--launcher slurm: sbatch --time per trial"},
      {"sweep.slurm_cpus_per_task", kInt, "4", "--launcher slurm: sbatch --cpus-per-task"},
      {"sweep.slurm_options", kStringList, "[]",
       "--launcher slurm: extra #SBATCH lines, e.g. [\"--partition=cpu\"]"},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::experiments
