// A trial's noise scale; see trial_noise.hpp.
#include "experiments/trial_noise.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lbt::experiments {

TrialNoise read_trial_noise(const std::filesystem::path& run_dir, std::int64_t steps_to_target) {
  std::map<std::string, std::map<std::int64_t, double>> by_estimator;  // step -> b_simple
  std::ifstream in(run_dir / "noise.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("estimator") || !j.contains("step")) continue;
    auto& steps = by_estimator[j["estimator"].get<std::string>()];
    const auto step = j["step"].get<std::int64_t>();
    if (j.contains("b_simple") && j["b_simple"].is_number()) {
      steps[step] = j["b_simple"].get<double>();
    } else {
      steps.erase(step);  // a later record of the step that is not resolved replaces it
    }
  }
  TrialNoise n;
  const auto it = by_estimator.count("two_batch") && !by_estimator["two_batch"].empty()
                      ? by_estimator.find("two_batch")
                      : by_estimator.find("per_example");
  if (it == by_estimator.end() || it->second.empty()) return n;
  const auto& values = it->second;
  n.records = static_cast<int>(values.size());
  n.start = values.begin()->second;
  std::vector<double> all;
  for (const auto& [step, b] : values) {
    all.push_back(b);
    if (steps_to_target >= 0 && step <= steps_to_target) n.at_target = b;
  }
  std::sort(all.begin(), all.end());
  const std::size_t m = all.size();
  n.averaged = m % 2 ? all[m / 2] : 0.5 * (all[m / 2 - 1] + all[m / 2]);
  return n;
}

}  // namespace lbt::experiments
