// The adaptive LR search; see lr_search.hpp.
#include "experiments/sweep/lr_search.hpp"

#include <algorithm>
#include <cmath>

namespace lbt::experiments {
namespace {

bool reached(const SearchPoint& p) {
  return p.status == "reached_target" && p.steps_to_target >= 0;
}

// The widest ratio between neighbouring LRs tried: how far an extension steps past an edge
// (the starting grid's spacing; at least the refinement ratio squared, so that one geometric
// midpoint refines the step; 2 when one LR was tried).
double extension_factor(const std::vector<SearchPoint>& sorted, double refine_ratio) {
  double widest = sorted.size() > 1 ? 1.0 : 2.0;
  for (std::size_t i = 1; i < sorted.size(); ++i)
    widest = std::max(widest, sorted[i].multiplier / sorted[i - 1].multiplier);
  return std::max(widest, refine_ratio * refine_ratio);
}

// No trial reached the target: step toward where one might. All diverged: lower; none
// diverged (too slow): higher; both: between the largest stable and the smallest diverged.
SearchStep search_unreached(const std::vector<SearchPoint>& p, double factor, double refine) {
  const auto diverged = [](const SearchPoint& x) { return x.status == "diverged"; };
  const bool all_diverged = std::all_of(p.begin(), p.end(), diverged);
  const bool none_diverged = std::none_of(p.begin(), p.end(), diverged);
  if (all_diverged) return {{p.front().multiplier / factor}, 0, "extend below: every LR diverged"};
  if (none_diverged) {
    return {{p.back().multiplier * factor}, 0, "extend above: no LR reached the target in budget"};
  }
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (!diverged(p[i - 1]) && diverged(p[i]) && p[i].multiplier / p[i - 1].multiplier > refine) {
      return {{std::sqrt(p[i - 1].multiplier * p[i].multiplier)},
              0,
              "refine: between the largest stable LR and the smallest diverged one"};
    }
  }
  return {{}, 0, "done: no LR reached the target"};
}

}  // namespace

int best_point(const std::vector<SearchPoint>& points) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    if (!reached(points[i])) continue;
    const SearchPoint& b = best < 0 ? points[i] : points[best];
    if (best < 0 || points[i].steps_to_target < b.steps_to_target ||
        (points[i].steps_to_target == b.steps_to_target && points[i].multiplier < b.multiplier)) {
      best = i;
    }
  }
  return best;
}

SearchStep next_lr_trials(const std::vector<SearchPoint>& finished, const LrSearchOptions& o) {
  if (finished.empty()) return {{}, 0, "done: no trials"};
  // A crashed trial says nothing about its LR: searching on would only crash again. Nor does
  // one that ran out of wall time (a hung program, or a limit too short for any LR).
  for (const SearchPoint& p : finished) {
    if (p.status == "failed")
      return {{}, 0, "stopped: a trial failed (its message is in sweep.csv; --retry-failed)"};
    if (p.status == "timeout")
      return {{}, 0, "stopped: a trial timed out (raise sweep.trial_timeout and --retry-failed)"};
  }
  std::vector<SearchPoint> p = finished;
  std::sort(p.begin(), p.end(),
            [](const SearchPoint& a, const SearchPoint& b) { return a.multiplier < b.multiplier; });
  const double factor = extension_factor(p, o.refine_ratio);
  SearchStep next;
  const int b = best_point(p);
  if (b < 0) {
    next = search_unreached(p, factor, o.refine_ratio);
  } else {
    const double best = p[b].multiplier;
    if (b == 0) {
      next = {{best / factor}, 0, "extend below: the best LR is the smallest tried"};
    } else if (b + 1 == static_cast<int>(p.size())) {
      next = {{best * factor}, 0, "extend above: the best LR is the largest tried"};
    } else {
      next.why = "refine: between the best LR and its neighbours";
      if (best / p[b - 1].multiplier > o.refine_ratio)
        next.multipliers.push_back(std::sqrt(p[b - 1].multiplier * best));
      if (p[b + 1].multiplier / best > o.refine_ratio)
        next.multipliers.push_back(std::sqrt(best * p[b + 1].multiplier));
      if (next.multipliers.empty())
        next.why = "done: the best LR's neighbours are within the ratio";
    }
    if (o.prune) next.prune_at_step = p[b].steps_to_target;
  }
  if (static_cast<int>(p.size() + next.multipliers.size()) > o.max_trials &&
      !next.multipliers.empty()) {
    return {{}, 0, "done: sweep.lr_max_trials reached (" + next.why + " was next)"};
  }
  if (next.multipliers.empty()) next.prune_at_step = 0;
  return next;
}

}  // namespace lbt::experiments
