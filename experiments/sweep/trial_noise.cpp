// A trial's noise scale; see trial_noise.hpp.
#include "experiments/sweep/trial_noise.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {
namespace {

// A line of lbt's noise.jsonl: an object with an estimator and an integer step. Anything else
// (a torn last line, a hand edit) is skipped: a trial's noise is never worth a sweep.
bool is_record(const nlohmann::json& j) {
  return j.is_object() && j.contains("estimator") && j.contains("step") &&
         j["step"].is_number_integer();
}

}  // namespace

TrialNoise::Interval read_interval(const nlohmann::json& object, const char* key) {
  TrialNoise::Interval ci;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array() || it->size() != 2) return ci;
  if ((*it)[0].is_number()) ci.lo = (*it)[0].get<double>();
  if ((*it)[1].is_number()) ci.hi = (*it)[1].get<double>();
  return ci;
}

namespace {

// A record's B_simple: resolved, or NaN with its interval's lower end as a bound.
struct NoiseRecord {
  double b_simple;
  TrialNoise::Interval ci95;
  bool resolved() const { return std::isfinite(b_simple); }
  double key() const { return resolved() ? b_simple : ci95.lo; }
};

// The median over records, an unresolved one counted at or above its bound: the value where
// the bounds leave it known (each sits above the middle), else NaN with the median of the keys
// as a lower bound in `at_least`. Dropping the unresolved ones, the large values late in
// training, read a trial's B_simple 2x low (2026-11-29 audit: 104 where >= 220).
double censored_median(const std::map<std::int64_t, NoiseRecord>& records, double& at_least) {
  std::vector<const NoiseRecord*> sorted;
  for (const auto& [step, r] : records) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [](const NoiseRecord* a, const NoiseRecord* b) { return a->key() < b->key(); });
  const std::size_t m = sorted.size(), upper = m / 2, lower = m % 2 ? m / 2 : m / 2 - 1;
  const double median = 0.5 * (sorted[lower]->key() + sorted[upper]->key());
  for (std::size_t i = 0; i <= upper; ++i) {
    if (sorted[i]->resolved()) continue;
    at_least = median;
    return TrialNoise::kNone;
  }
  return median;
}

}  // namespace

TrialNoise read_trial_noise(const std::filesystem::path& run_dir, std::int64_t steps_to_target) {
  std::map<std::string, std::map<std::int64_t, NoiseRecord>> by_estimator;  // step -> record
  std::ifstream in = io::open_regular_file(run_dir / "noise.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!is_record(j) || !j["estimator"].is_string()) continue;
    // The last record of a step wins (a resumed run rewrites its lines). One with neither a
    // value nor a positive lower bound (too few updates yet) measured nothing.
    const bool resolved = j.contains("b_simple") && j["b_simple"].is_number();
    const NoiseRecord r{resolved ? j["b_simple"].get<double>() : TrialNoise::kNone,
                        read_interval(j, "b_simple_ci95")};
    auto& records = by_estimator[j["estimator"].get<std::string>()];
    const auto step = j["step"].get<std::int64_t>();
    if (resolved || r.ci95.lo > 0.0)
      records[step] = r;
    else
      records.erase(step);
  }
  TrialNoise n;
  const auto it = by_estimator.count("two_batch") && !by_estimator["two_batch"].empty()
                      ? by_estimator.find("two_batch")
                      : by_estimator.find("per_example");
  // Measured, and no record bounded B_simple above 0: its average is at least 0, which says so
  // (the trial's cells read as a sweep without the estimator: 2026-11-30 audit).
  if (it == by_estimator.end() || it->second.empty()) {
    if (!by_estimator.empty()) n.averaged_ci95.lo = 0.0;
    return n;
  }
  const auto& records = it->second;
  // The first record and the last at or before the target, resolved or not (the first and the
  // last *resolved* ones were read from other steps, which nothing recorded).
  for (const auto& [step, r] : records) n.records += r.resolved();
  n.start = records.begin()->second.b_simple;
  n.start_ci95 = records.begin()->second.ci95;
  for (const auto& [step, r] : records) {
    if (steps_to_target < 0 || step > steps_to_target) break;
    n.at_target = r.b_simple;
    n.at_target_ci95 = r.ci95;
  }
  n.averaged = censored_median(records, n.averaged_ci95.lo);
  return n;
}

double read_trial_b_noise(const std::filesystem::path& run_dir) {
  std::map<std::int64_t, double> by_step;  // the last record per step wins
  std::ifstream in = io::open_regular_file(run_dir / "noise.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!is_record(j) || j["estimator"] != "hessian") continue;
    const auto step = j["step"].get<std::int64_t>();
    if (j.contains("b_noise") && j["b_noise"].is_number()) {
      // The probe writes a positive B_noise or null (unresolved): anything else was edited in.
      const double b = j["b_noise"].get<double>();
      if (!(b > 0.0 && std::isfinite(b))) {
        throw DataError((run_dir / "noise.jsonl").string() +
                            ": the Hessian probe's b_noise at step " + std::to_string(step) +
                            " is " + j["b_noise"].dump() +
                            ", which no probe writes (a positive number, or null)",
                        "restore the trial's noise.jsonl, or rerun the trial");
      }
      by_step[step] = b;
    } else
      by_step.erase(step);
  }
  if (by_step.empty()) return TrialNoise::kNone;
  std::vector<double> all;
  for (const auto& [step, b] : by_step) all.push_back(b);
  std::sort(all.begin(), all.end());
  const std::size_t m = all.size();
  return m % 2 ? all[m / 2] : 0.5 * (all[m / 2 - 1] + all[m / 2]);
}

namespace {

// A trial's folder as best.csv names it: trials/NAME, nothing absolute and no "..", so an edited
// file cannot send lbt fit to read runs outside the sweep.
bool names_a_trial(const std::string& run_dir) {
  const std::filesystem::path p(run_dir);
  if (p.is_absolute() || p.empty() || *p.begin() != "trials") return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

std::vector<double> best_trials_b_noise(const std::filesystem::path& sweep_dir) {
  std::vector<double> values;
  const auto best_csv = sweep_dir / "best.csv";
  if (!std::filesystem::exists(best_csv)) return values;
  const CsvTable best = read_csv(best_csv);
  const int cd = best.column("run_dir"), cs = best.column("status");
  if (cd < 0 || cs < 0) return values;
  for (const auto& row : best.rows) {
    if (row[cs] != "reached_target" || row[cd].empty()) continue;
    if (!names_a_trial(row[cd])) {
      throw DataError(best_csv.string() + ": run_dir '" + row[cd] +
                          "' is not a trial folder of this sweep (trials/NAME)",
                      "restore best.csv: rerunning lbt sweep on this directory rewrites it");
    }
    const double b = read_trial_b_noise(sweep_dir / row[cd]);
    if (std::isfinite(b)) values.push_back(b);
  }
  return values;
}

}  // namespace lbt::experiments
