// Steps-to-target readings; see target_reading.hpp.
#include "trainer/target_reading.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace lbt::trainer {

TargetDefinition parse_target_definition(const std::string& text) {
  if (text == "ema") return TargetDefinition::kEma;
  if (text == "first_passage") return TargetDefinition::kFirstPassage;
  throw ConfigError("train.target_definition '" + text + "' is not ema or first_passage",
                    "use ema (the default) or first_passage (Shallue et al.'s reading)");
}

const char* definition_name(TargetDefinition d) {
  return d == TargetDefinition::kEma ? "ema" : "first_passage";
}

void check_ema_horizon(const TrainConfig& cfg, std::int64_t total_steps,
                       const std::string& source) {
  if (!cfg.target.enabled() || cfg.target_definition != TargetDefinition::kEma) return;
  // Runs shorter than the default horizon can average 2 steps over (2 / 0.1 = 20 steps: smoke
  // runs, lbt memory --probe's 2-step trainings) are not refused: no reading of theirs is
  // meant as a result, and refusing them broke those commands on every preset with a target.
  constexpr std::int64_t kShortestRead = 20;
  const double horizon = cfg.ema_horizon * static_cast<double>(total_steps);
  if (horizon >= 2.0 || total_steps < kShortestRead) return;
  char got[96];
  std::snprintf(got, sizeof got, "%g x %lld steps = %.3g steps", cfg.ema_horizon,
                static_cast<long long>(total_steps), horizon);
  throw_config_error(source, "train.ema_horizon",
                     "long enough for an average of >= 2 steps at the run's end", got,
                     "raise train.ema_horizon or the budget, or set "
                     "train.target_definition=first_passage");
}

double ema_weight(std::int64_t step, std::int64_t since, double horizon) {
  const double tau = horizon * static_cast<double>(step);
  return tau <= static_cast<double>(since) ? 1.0 : static_cast<double>(since) / tau;
}

double shortfall(const Target& target, double metric) {
  return target.at_least ? target.value - metric : metric - target.value;
}

bool clearly_below(const Target& target, double metric, double band) {
  // NaN (not measured) is never met and counts as clearly below.
  return !(shortfall(target, metric) <= band * std::abs(target.value));
}

std::int64_t next_eval_after(std::int64_t step, std::int64_t every, double growth) {
  if (growth <= 1.0) return (step / every + 1) * every;
  std::int64_t s = 0;
  while (s <= step) {
    const double grown = std::ceil((growth - 1.0) * static_cast<double>(s) - 1e-9);
    s += std::max<std::int64_t>(every, static_cast<std::int64_t>(grown));
  }
  return s;
}

namespace {

std::int64_t grid_spacing(std::int64_t s, double resolution) {
  return std::max<std::int64_t>(1,
                                static_cast<std::int64_t>(resolution * static_cast<double>(s + 1)));
}

}  // namespace

std::int64_t grid_step_at_or_after(std::int64_t step, double resolution, const Align& align) {
  if (step <= 0) return 0;
  // While resolution x (s + 1) < 2 the spacing is one step: every step the run can evaluate at
  // is on the grid, so that part is not walked (resolution 0: all of it).
  const double dense_end = resolution > 0.0 ? 2.0 / resolution - 1.0 : HUGE_VAL;
  if (static_cast<double>(step - 1) < dense_end) return align(step);
  std::int64_t s = align(static_cast<std::int64_t>(std::max(0.0, std::floor(dense_end))));
  while (s < step) s = align(s + grid_spacing(s, resolution));
  return s;
}

Walk walk_to_crossing(std::int64_t from, std::int64_t hi, double resolution, const Align& align,
                      const std::function<bool(std::int64_t)>& met_at) {
  Walk w;
  w.bracket = {from, hi};
  if (resolution >= 1.0) return w;
  for (std::int64_t at = grid_step_at_or_after(from + 1, resolution, align); at < hi;
       at = grid_step_at_or_after(at + 1, resolution, align)) {
    ++w.evals;
    if (met_at(at)) {
      w.bracket.hi = at;
      return w;
    }
    w.bracket.lo = at;
  }
  return w;
}

StepBracket first_passage(std::vector<MetricPoint> points, const Target& target) {
  std::stable_sort(points.begin(), points.end(),
                   [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
  StepBracket b;
  for (const MetricPoint& p : points) {
    if (target.met(p.value)) {
      b.hi = p.step;
      return b;
    }
    b.lo = p.step;
  }
  b.lo = 0;
  return b;
}

double fluctuation(std::vector<MetricPoint> points) {
  std::sort(points.begin(), points.end(),
            [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
  points.erase(
      std::unique(points.begin(), points.end(),
                  [](const MetricPoint& a, const MetricPoint& b) { return a.step == b.step; }),
      points.end());
  // Each inner point's residual from the line through its neighbours: r = v - (a v_prev + b
  // v_next), a + b = 1, is free of any linear trend and, for white noise of spread sigma, has
  // variance sigma^2 (1 + a^2 + b^2).
  double sum = 0.0;
  int n = 0;
  for (std::size_t i = 1; i + 1 < points.size(); ++i) {
    const double t0 = static_cast<double>(points[i - 1].step),
                 t1 = static_cast<double>(points[i].step),
                 t2 = static_cast<double>(points[i + 1].step);
    const double a = (t2 - t1) / (t2 - t0), b = (t1 - t0) / (t2 - t0);
    const double r = points[i].value - (a * points[i - 1].value + b * points[i + 1].value);
    sum += r * r / (1 + a * a + b * b);
    ++n;
  }
  return n < 2 ? std::nan("") : std::sqrt(sum / n);
}

}  // namespace lbt::trainer
