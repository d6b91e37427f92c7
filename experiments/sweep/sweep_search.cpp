// Growing a sweep's plan; see sweep_search.hpp.
#include "experiments/sweep/sweep_search.hpp"

#include <algorithm>

namespace lbt::experiments {
namespace {

// Adds one batch size's next trials; false when nothing is decided (yet, or any more).
bool grow_batch(const SweepSettings& s, std::int64_t B, std::vector<Trial>& plan,
                std::vector<TrialResult>& results,
                const std::function<TrialResult(const Trial&)>& read, std::string& decision) {
  int count = 0, seed_trials = 0;
  for (const TrialResult& r : results) {
    if (r.trial.batch_size != B) continue;
    if (!is_final_status(r.status)) return false;  // the round is not over
    ++count;
    seed_trials += r.trial.seed > 0;
  }
  const auto add = [&](double multiplier, int seed, std::int64_t prune_at_step) {
    Trial t = make_trial(s, B, count++, multiplier, -1.0, seed, prune_at_step);
    t.index = static_cast<int>(plan.size());
    plan.push_back(t);
    results.push_back(read(t));
  };
  const std::vector<SearchPoint> points = search_points(results, B);
  // Why the search ended, recomputed from its trials at every pass (a rerun, whose seeds were
  // added before, left it empty; adding seeds replaced it).
  if (s.lr_search == "adaptive") {
    const SearchStep next = next_lr_trials(points, s.search);
    decision = next.why;
    if (seed_trials == 0) {
      for (double m : next.multipliers) add(m, 0, next.prune_at_step);
      if (!next.multipliers.empty()) return true;
    }
  } else {
    decision = s.lr_search + ": the LRs it gives, no search";
  }
  const int best = best_point(points);
  if (s.seeds <= 1 || best < 0) return false;
  decision += "; seeds: " + std::to_string(s.seeds) + " at the best LR";
  if (seed_trials >= s.seeds - 1) return false;
  for (int seed = seed_trials + 1; seed < s.seeds; ++seed) add(points[best].multiplier, seed, 0);
  return true;
}

}  // namespace

std::vector<SearchPoint> search_points(const std::vector<TrialResult>& results,
                                       std::int64_t batch_size) {
  std::vector<SearchPoint> points;
  for (const TrialResult& r : results) {
    if (r.trial.batch_size == batch_size && r.trial.seed == 0)
      points.push_back({r.trial.multiplier, r.status, r.steps_to_target});
  }
  return points;
}

void grow_plan(const SweepSettings& s, std::vector<Trial>& plan, std::vector<TrialResult>& results,
               const std::function<TrialResult(const Trial&)>& read,
               std::map<std::int64_t, std::string>& decisions) {
  for (bool grew = true; grew;) {
    grew = false;
    for (std::int64_t B : s.batch_sizes)
      grew |= grow_batch(s, B, plan, results, read, decisions[B]);
  }
}

}  // namespace lbt::experiments
