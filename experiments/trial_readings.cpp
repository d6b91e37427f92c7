// summary.json's readings; see trial_readings.hpp.
#include "experiments/trial_readings.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/io.hpp"
#include "core/json_number.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
using trainer::MetricPoint;
using trainer::TargetDefinition;

namespace {

nlohmann::json step_or_null(std::int64_t s) {
  return s >= 0 ? nlohmann::json(s) : nlohmann::json();
}

}  // namespace

std::vector<MetricPoint> reading_points(const fs::path& eval_jsonl, TargetDefinition reading,
                                        const std::string& metric) {
  std::vector<MetricPoint> points;
  std::ifstream in = io::open_regular_file(eval_jsonl);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json e;
    try {
      e = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a torn last line after a kill
    }
    const nlohmann::json* src = &e;
    if (reading == TargetDefinition::kEma) {
      if (!e.contains("ema")) continue;
      src = &e["ema"];
    }
    const auto it = src->find(metric);
    if (!e.contains("step") || !e["step"].is_number_integer() || it == src->end()) continue;
    points.push_back(
        {e["step"].get<std::int64_t>(), it->is_number() ? it->get<double>() : std::nan("")});
  }
  return points;
}

ReadingResult read_reading(const std::vector<MetricPoint>& points, const trainer::Target& target,
                           std::int64_t last_step) {
  ReadingResult r;
  const trainer::StepBracket b = trainer::first_passage(points, target);
  if (b.met()) r.lo = b.lo, r.hi = b.hi;
  const double from = b.met() ? 0.5 * b.hi : 0.5 * last_step;
  const double to = b.met() ? 2.0 * b.hi : last_step;
  std::vector<MetricPoint> near;
  for (const MetricPoint& p : points) {
    if (p.step >= from && p.step <= to && std::isfinite(p.value)) near.push_back(p);
    if (!std::isfinite(p.value)) continue;
    const bool better =
        std::isnan(r.best) || (target.at_least ? p.value > r.best : p.value < r.best);
    if (better) r.best = p.value;
  }
  r.fluctuation = trainer::fluctuation(near);
  return r;
}

void add_readings(nlohmann::json& summary, const fs::path& eval_jsonl,
                  const trainer::TrainConfig& cfg, const trainer::TrainOutcome& o) {
  summary["target_definition"] = trainer::definition_name(cfg.target_definition);
  summary["ema_horizon"] = cfg.ema_horizon;
  summary["target_band"] = cfg.target_band;
  if (!cfg.target.enabled()) return;
  nlohmann::json readings = nlohmann::json::object();
  for (TargetDefinition d : trainer::kAllReadings) {
    ReadingResult r =
        read_reading(reading_points(eval_jsonl, d, cfg.target.metric), cfg.target, o.steps);
    if (d == cfg.target_definition) {  // the loop's bracket, refined by replay
      r.lo = o.steps_to_target >= 0 ? o.steps_lo : -1;
      r.hi = o.steps_to_target;
    }
    readings[trainer::definition_name(d)] = {{"steps_lo", step_or_null(r.lo)},
                                             {"steps_hi", step_or_null(r.hi)},
                                             {"fluctuation", finite_or_null(r.fluctuation)},
                                             {"best", finite_or_null(r.best)}};
  }
  summary["readings"] = readings;
}

}  // namespace lbt::experiments
