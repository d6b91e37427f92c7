// The adaptive batch's predicted and measured gain; see adaptive_gain.hpp.
#include "analysis/adaptive_gain.hpp"

#include <algorithm>
#include <cmath>

namespace lbt::analysis {
namespace {

bool usable(const TrajectoryPoint& p) {
  return std::isfinite(p.step) && std::isfinite(p.b_noise) && p.b_noise > 0.0 &&
         std::isfinite(p.batch) && p.batch > 0.0;
}

bool positive(double x) {
  return std::isfinite(x) && x > 0.0;
}

}  // namespace

// The integrals over progress s as sums: interval [step_i, step_j) between consecutive usable
// points has dS = step_j - step_i and ds = dS / (1 + B_noise_i / B_i) (eq. 2.7-2.11).
namespace {

// The ds-weighted sums over the usable intervals.
struct ProgressSums {
  double s = 0.0, sqrt_noise = 0.0, noise = 0.0, noise_over_batch = 0.0, batch = 0.0;
};

ProgressSums progress_sums(std::span<const TrajectoryPoint> trajectory) {
  ProgressSums sum;
  const TrajectoryPoint* prev = nullptr;
  for (const auto& p : trajectory) {
    if (!usable(p)) continue;
    if (prev && p.step > prev->step) {
      const double ds = (p.step - prev->step) / (1.0 + prev->b_noise / prev->batch);
      sum.s += ds;
      sum.sqrt_noise += ds * std::sqrt(prev->b_noise);
      sum.noise += ds * prev->b_noise;
      sum.noise_over_batch += ds * prev->b_noise / prev->batch;
      sum.batch += ds * prev->batch;
    }
    prev = &p;
  }
  return sum;
}

}  // namespace

std::optional<double> predicted_gamma(std::span<const TrajectoryPoint> trajectory) {
  const ProgressSums sum = progress_sums(trajectory);
  if (!(sum.s > 0.0)) return std::nullopt;
  return sum.sqrt_noise * sum.sqrt_noise / (sum.s * sum.noise);
}

// S - S_min = int ds B_noise/B, E - E_min = int ds B; S_min = int ds, E_min = int ds B_noise.
std::optional<double> model_product(std::span<const TrajectoryPoint> trajectory) {
  const ProgressSums sum = progress_sums(trajectory);
  if (!(sum.s > 0.0)) return std::nullopt;
  return (sum.noise_over_batch / sum.s) * (sum.batch / sum.noise);
}

MeasuredProduct measured_product(Bracket S, Bracket E, Bracket S_min, Bracket E_min) {
  MeasuredProduct p;
  if (!positive(S_min.value) || !positive(E_min.value)) {
    p.why = "the fixed-batch fit gave no finite S_min and E_min";
    return p;
  }
  if (S.value <= S_min.value || E.value <= E_min.value) {
    p.why = std::string("the adaptive run took no more ") +
            (S.value <= S_min.value ? "steps than S_min" : "examples than E_min") +
            ": below the fixed batches' fitted curve, where the per-step model does not hold";
    return p;
  }
  p.value = (S.value / S_min.value - 1.0) * (E.value / E_min.value - 1.0);
  // Lower: the fewest steps and examples against the largest S_min, E_min.
  const auto factor_lo = [](double x, double min_hi) {
    return positive(min_hi) ? std::max(0.0, x / min_hi - 1.0) : 0.0;
  };
  p.lo = factor_lo(S.lo, S_min.hi) * factor_lo(E.lo, E_min.hi);
  if (positive(S_min.lo) && positive(E_min.lo))
    p.hi = std::max(0.0, S.hi / S_min.lo - 1.0) * std::max(0.0, E.hi / E_min.lo - 1.0);
  return p;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// {"median", "min", "max"} of `values`; nulls when empty.
nlohmann::json spread(std::vector<double> values) {
  if (values.empty()) return {{"median", nullptr}, {"min", nullptr}, {"max", nullptr}};
  std::sort(values.begin(), values.end());
  return {{"median", median(values)}, {"min", values.front()}, {"max", values.back()}};
}

nlohmann::json seed_json(const AdaptiveSeed& s) {
  nlohmann::json j = {{"trial", s.name},
                      {"status", s.status},
                      {"gamma_predicted", opt(s.gamma)},
                      {"product_predicted", opt(s.model)}};
  j["steps_to_target"] = s.reached ? nlohmann::json(s.steps.value) : nlohmann::json();
  j["steps_bracket"] = s.reached ? nlohmann::json{s.steps.lo, s.steps.hi} : nlohmann::json();
  j["examples_to_target"] = s.reached ? nlohmann::json(s.examples.value) : nlohmann::json();
  j["examples_bracket"] =
      s.reached ? nlohmann::json{s.examples.lo, s.examples.hi} : nlohmann::json();
  return j;
}

// fit.json's value and interval of `key` as a Bracket; nullopt when absent or not finite.
std::optional<Bracket> fit_bracket(const nlohmann::json& fit, const char* key) {
  if (!fit.is_object() || !fit.contains(key) || !fit[key].is_number()) return std::nullopt;
  const auto& i = fit["intervals"][key];
  if (!i.is_array() || i.size() != 2 || !i[0].is_number() || !i[1].is_number()) return std::nullopt;
  return Bracket{fit[key].get<double>(), i[0].get<double>(), i[1].get<double>()};
}

}  // namespace

nlohmann::json adaptive_summary(const std::vector<AdaptiveSeed>& seeds, const nlohmann::json& fit) {
  nlohmann::json out = {{"seeds", nlohmann::json::array()}};
  std::vector<double> steps, examples, gammas, models;
  Bracket S{0, 0, 0}, E{0, 0, 0};
  for (const AdaptiveSeed& s : seeds) {
    out["seeds"].push_back(seed_json(s));
    if (s.gamma) gammas.push_back(*s.gamma);
    if (s.model) models.push_back(*s.model);
    if (!s.reached) continue;
    S.lo = steps.empty() ? s.steps.lo : std::min(S.lo, s.steps.lo);
    E.lo = examples.empty() ? s.examples.lo : std::min(E.lo, s.examples.lo);
    S.hi = std::max(S.hi, s.steps.hi);
    E.hi = std::max(E.hi, s.examples.hi);
    steps.push_back(s.steps.value);
    examples.push_back(s.examples.value);
  }
  out["seeds_reached"] = steps.size();
  out["steps_to_target"] = spread(steps);
  out["examples_to_target"] = spread(examples);
  out["gamma_predicted"] = spread(gammas);
  out["product_predicted"] = spread(models);
  nlohmann::json product = {{"value", nullptr}, {"lo", nullptr}, {"hi", nullptr}};
  const auto S_min = fit_bracket(fit, "S_min"), E_min = fit_bracket(fit, "E_min");
  if (steps.empty()) {
    product["why"] = "no adaptive seed reached the target";
  } else if (!S_min || !E_min) {
    product["why"] = "no fixed-batch fit (fit.json) with S_min and E_min intervals";
  } else {
    S.value = median(steps);
    E.value = median(examples);
    const MeasuredProduct p = measured_product(S, E, *S_min, *E_min);
    product = {{"value", opt(p.value)}, {"lo", opt(p.lo)}, {"hi", opt(p.hi)}};
    // The two factors' ratios at the point values, so a null product still says which side of
    // the fixed-batch curve the adaptive runs lie.
    product["S_over_S_min"] = S.value / S_min->value;
    product["E_over_E_min"] = E.value / E_min->value;
    if (!p.why.empty()) product["why"] = p.why;
  }
  product["definition"] =
      "(S/S_min - 1)(E/E_min - 1) at the median steps and examples to the target; 1 on the fixed "
      "batches' curve, gamma_predicted for the sqrt rule under the per-step model (McCandlish et "
      "al. 2018, App. D, eq. D.5 as derived in analysis/adaptive_gain.hpp); bounds from the "
      "seeds' brackets and fit.json's S_min and E_min intervals";
  out["measured_product"] = product;
  return out;
}

}  // namespace lbt::analysis
