// How a sweep's plan grows while it runs: for each batch size whose trials have all ended, the
// adaptive LR search's next round (lr_search.hpp), and once the search is over the extra seeds
// of its best (B, LR). A function of the finished results only, so a rerun rebuilds the same
// plan from the run directories (and finds the added trials already done).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {

// The search trials of one batch size as the search sees them.
std::vector<SearchPoint> search_points(const std::vector<TrialResult>& results,
                                       std::int64_t batch_size);

// Appends the trials the finished ones decide to `plan` and their results (read by `read`) to
// `results` (kept parallel to `plan`), until nothing more is decided. `decisions` gets, per
// batch size, the search's last word ("refine: ...", "done: ...", "seeds").
void grow_plan(const SweepSettings& settings, std::vector<Trial>& plan,
               std::vector<TrialResult>& results,
               const std::function<TrialResult(const Trial&)>& read,
               std::map<std::int64_t, std::string>& decisions);

}  // namespace lbt::experiments
