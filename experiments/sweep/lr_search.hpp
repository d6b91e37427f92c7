// The adaptive LR search of one batch size (sweep.lr_search = "adaptive"): a pure function
// from the finished trials to the next ones, so a rerun (or a SLURM array task) that reads the
// same results decides the same trials. It starts from the prior's grid; while the best trial
// sits on an edge of the LRs tried it extends the grid past it (by the grid's own spacing);
// then it refines between the best and its neighbours (geometric midpoints) until they lie
// within sweep.lr_refine_ratio (default 2^(1/2)). Trials of later rounds may be pruned: they
// stop at the best's steps-to-target, since a trial not at the target by then cannot beat it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lbt::experiments {

// What one finished trial says to the search.
struct SearchPoint {
  double multiplier = 1.0;            // of the LR prior at this batch size
  std::string status;                 // reached_target | budget_exhausted | diverged | pruned | ...
  std::int64_t steps_to_target = -1;  // reached: the first evaluated step meeting the target
};

struct LrSearchOptions {
  double refine_ratio = 1.4142135623730951;  // neighbours of the best within this ratio: done
  int max_trials = 12;                       // per batch size, the starting grid included
  bool prune = true;                         // later trials stop at the best's steps-to-target
};

// The best of `points`: the fewest steps to the target; equal steps go to the smaller LR (the
// more stable of equals; never wall time, so the winner does not depend on machine load).
// -1 when none reached the target.
int best_point(const std::vector<SearchPoint>& points);

struct SearchStep {
  std::vector<double> multipliers;  // the next trials (empty: the search is over)
  std::int64_t prune_at_step = 0;   // their train.prune_at_step (0: none)
  std::string why;                  // extend below / extend above / refine / done: ...
};

// The next round after every trial in `finished` (the grid's and earlier rounds') ended.
SearchStep next_lr_trials(const std::vector<SearchPoint>& finished, const LrSearchOptions& options);

}  // namespace lbt::experiments
