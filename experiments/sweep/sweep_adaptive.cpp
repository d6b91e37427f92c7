// The adaptive arm of a sweep; see sweep_adaptive.hpp.
#include "experiments/sweep/sweep_adaptive.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/io.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// Every parsable JSON object line of a JSONL file (a torn last line after a kill is skipped).
template <class F>
void for_each_line(const fs::path& file, F f) {
  std::ifstream in = io::open_regular_file(file);  // a FIFO would block the sweep
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) f(j);
  }
}

double field_or_nan(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
}

}  // namespace

std::vector<analysis::TrajectoryPoint> read_adaptive_trajectory(const fs::path& run,
                                                                std::int64_t until_step) {
  std::map<std::int64_t, double> batch;  // steps done (1-based) -> that step's global batch
  for_each_line(run / "metrics.jsonl", [&](const nlohmann::json& m) {
    if (m.contains("step") && m["step"].is_number_integer() && m.contains("global_batch") &&
        m["global_batch"].is_number())
      batch[m["step"].get<std::int64_t>()] = m["global_batch"].get<double>();
  });
  // Step index t's report (0-based) steers the batch of step t + 2 (1-based).
  std::map<std::int64_t, std::pair<double, double>> ema;  // t -> (per_example, two_batch)
  for_each_line(run / "noise.jsonl", [&](const nlohmann::json& n) {
    if (!n.contains("b_simple_ema") || !n.contains("step") || !n["step"].is_number_integer())
      return;
    auto& e =
        ema.try_emplace(n["step"].get<std::int64_t>(), std::nan(""), std::nan("")).first->second;
    (n.contains("estimator") && n["estimator"] == "per_example" ? e.first : e.second) =
        field_or_nan(n, "b_simple_ema");
  });
  std::vector<analysis::TrajectoryPoint> out;
  for (const auto& [t, e] : ema) {
    if (until_step > 0 && t + 1 > until_step) break;
    const auto next = batch.find(t + 2);
    if (next == batch.end()) continue;
    const double b = std::isfinite(e.first) ? e.first : e.second;
    out.push_back({static_cast<double>(t + 1), b, next->second});
  }
  return out;
}

analysis::AdaptiveSeed read_adaptive_seed(const TrialResult& r, const fs::path& run) {
  analysis::AdaptiveSeed s;
  s.name = r.trial.name;
  s.status = r.status;
  s.reached = r.status == "reached_target" && r.steps_to_target > 0 && r.examples_to_target > 0;
  const auto trajectory = read_adaptive_trajectory(run, s.reached ? r.steps_to_target : 0);
  s.gamma = analysis::predicted_gamma(trajectory);
  s.model = analysis::model_product(trajectory);
  if (!s.reached) return s;
  const double hi = static_cast<double>(r.steps_to_target);
  const double lo = static_cast<double>(std::max<std::int64_t>(0, r.steps_lo));
  double examples_lo = 0.0;
  for_each_line(run / "eval.jsonl", [&](const nlohmann::json& e) {
    if (e.value("step", std::int64_t{-1}) == r.steps_lo && e.contains("examples"))
      examples_lo = e["examples"].get<double>();
  });
  s.steps = {hi, lo, hi};
  s.examples = {static_cast<double>(r.examples_to_target), examples_lo,
                static_cast<double>(r.examples_to_target)};
  return s;
}

nlohmann::json write_adaptive_json(const fs::path& dir, const std::vector<TrialResult>& results,
                                   const nlohmann::json& fit) {
  std::vector<analysis::AdaptiveSeed> seeds;
  for (const TrialResult& r : results) {
    if (r.trial.adaptive) seeds.push_back(read_adaptive_seed(r, dir / "trials" / r.trial.name));
  }
  if (seeds.empty()) return nullptr;
  nlohmann::json a = analysis::adaptive_summary(seeds, fit);
  a["steps_resolution"] =
      "each seed's steps_to_target is the first evaluation meeting the target, bracketed "
      "(steps_lo, steps] by the evaluation before (every train.eval_every steps; not refined)";
  io::atomic_write(dir / "adaptive.json", a.dump(2) + "\n");
  return a;
}

std::string format_adaptive_table(const nlohmann::json& a) {
  const auto num = [](const nlohmann::json& v, const char* fmt) {
    if (!v.is_number()) return std::string("null");
    char buf[48];
    std::snprintf(buf, sizeof buf, fmt, v.get<double>());
    return std::string(buf);
  };
  const auto spread = [&](const nlohmann::json& s, const char* fmt) {
    return num(s["median"], fmt) + " [" + num(s["min"], fmt) + ", " + num(s["max"], fmt) + "]";
  };
  const auto& p = a["measured_product"];
  std::string out = "adaptive (" + std::to_string(a["seeds_reached"].get<int>()) + "/" +
                    std::to_string(a["seeds"].size()) +
                    " seeds reached the target; median [min, max]):\n";
  // %.10g: a median of two seeds may be a half (64.5 printed "64", adaptive.json 64.5).
  out += "  steps to target     " + spread(a["steps_to_target"], "%.10g") + "\n";
  out += "  examples to target  " + spread(a["examples_to_target"], "%.10g") + "\n";
  out += "  gamma predicted     " + spread(a["gamma_predicted"], "%.3f") +
         " (the sqrt rule's product under the model)\n";
  out += "  product predicted   " + spread(a["product_predicted"], "%.3f") +
         " (the model's product for the batches used)\n";
  out += "  (S/S_min-1)(E/E_min-1) " + num(p["value"], "%.3f") + " [" + num(p["lo"], "%.3f") +
         ", " + num(p["hi"], "%.3f") + "]" +
         (p.contains("why") ? " (" + p["why"].get<std::string>() + ")" : "") + "\n";
  if (p.contains("S_over_S_min"))
    out += "  S/S_min = " + num(p["S_over_S_min"], "%.3f") +
           ", E/E_min = " + num(p["E_over_E_min"], "%.3f") + " (point values)\n";
  return out;
}

}  // namespace lbt::experiments
