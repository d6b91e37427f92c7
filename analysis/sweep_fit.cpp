// A sweep's fit.json from its measurements; see sweep_fit.hpp.
#include "analysis/sweep_fit.hpp"

#include <cmath>
#include <random>

#include "analysis/measured_noise.hpp"
#include "analysis/regimes.hpp"
#include "core/json_number.hpp"
#include "core/rng.hpp"

namespace lbt::analysis {

nlohmann::json interval_json(Interval i) {
  if (!std::isfinite(i.lo)) return nullptr;  // no resample (NaN), or nothing bounded (+inf)
  if (i.hi == HUGE_VAL) return nlohmann::json::array({i.lo, nullptr});  // open above
  if (!std::isfinite(i.hi)) return nullptr;
  return nlohmann::json::array({i.lo, i.hi});
}

namespace {

// E_min and B_crit, and their intervals, exist only where the fit resolved a critical batch;
// B_crit's value not where it lies above the sweep (its interval, open above, bounds it below).
nlohmann::json resolved_value(double value, const CriticalBatchFit& f) {
  return f.resolved ? nlohmann::json(value) : nlohmann::json();
}
nlohmann::json resolved_interval(Interval i, const CriticalBatchFit& f) {
  return f.resolved ? interval_json(i) : nlohmann::json();
}
nlohmann::json b_crit_value(const CriticalBatchFit& f) {
  return f.b_crit_measured() ? nlohmann::json(f.B_crit) : nlohmann::json();
}
// Above the sweep S_min is the optimiser's floor (~1e-24; the steps fall as E_min / B): null,
// its interval [0, hi] bounding it only above (intervals_of).
nlohmann::json s_min_value(const CriticalBatchFit& f) {
  return f.above_sweep ? nlohmann::json() : nlohmann::json(f.S_min);
}

// "resolved" (B_crit measured) and "above_sweep" of fit `f`, as fit.json and plan.json give them.
void add_resolution(nlohmann::json& out, const CriticalBatchFit& f) {
  out["resolved"] = f.b_crit_measured();
  out["above_sweep"] = f.above_sweep;
}

// Percentile-bootstrap interval of the median of `values` (>= 2), resampling the values.
// The swept batch sizes in `regime`, the range they span (null when none), and for each the share
// of the bootstrap's fits that agree (regime_agreement; null from too few).
nlohmann::json regime_range(const std::vector<ScalingPoint>& pts, const RegimeEdges& edges,
                            Regime regime, const std::vector<CriticalBatchFit>& fits,
                            const FitOptions& o) {
  nlohmann::json sizes = nlohmann::json::array(), shares = nlohmann::json::array();
  for (const auto& p : pts) {
    if (regime_of(p.batch_size, edges) != regime) continue;
    sizes.push_back(p.batch_size);
    const double share = regime_agreement(p.batch_size, regime, o.regime_tolerance, fits, o.level);
    shares.push_back(finite_or_null(share));
  }
  nlohmann::json r = {{"batch_sizes", sizes}, {"agreement", shares}};
  r["from"] = sizes.empty() ? nlohmann::json() : sizes.front();
  r["to"] = sizes.empty() ? nlohmann::json() : sizes.back();
  return r;
}

// fit.json's lr_law (lr_law.hpp) and intervals.lr_law; null with a reason below 3 batch sizes.
void add_lr_law(nlohmann::json& fit, const std::vector<LrPoint>& reached, const FitOptions& o) {
  fit["intervals"]["lr_law"] = nullptr;
  if (reached.size() < 3) {
    fit["lr_law"] = {{"fitted", false}, {"why", "fewer than 3 batch sizes reached the target"}};
    return;
  }
  const std::vector<LrPoint> searched = searched_lr_points(reached);
  if (searched.size() < 3) {
    fit["lr_law"] = {{"fitted", false},
                     {"why",
                      "fewer than 3 batch sizes had their LR searched (one LR tried gives the "
                      "scaling rule back, not a measured best LR)"}};
    return;
  }
  // A best LR at the edge of those tried is a bound, not a measurement: fitted as one, it gave
  // the sqrt rule's alpha back, "inside the interval" (2026-11-30 audit).
  std::vector<LrPoint> points;
  nlohmann::json edges = nlohmann::json::array();
  for (const LrPoint& p : searched) {
    if (lr_bracketed(p)) {
      points.push_back(p);
    } else {
      edges.push_back({{"batch_size", p.batch_size},
                       {"lr", p.lr},
                       {"optimum", p.lr_hi == HUGE_VAL ? "above" : "below"}});
    }
  }
  if (points.size() < 3) {
    fit["lr_law"] = {
        {"fitted", false},
        {"why", "fewer than 3 batch sizes had their best LR inside the LRs tried (at " +
                    std::to_string(edges.size()) +
                    " it was the largest or smallest tried: the optimum lies beyond; try LRs "
                    "beyond them: sweep.lr_multipliers, lr_min_factor / lr_max_factor, "
                    "lr_max_trials)"},
        {"edge_points", edges}};
    return;
  }
  const LrLawFit law = fit_lr_law(points, o.resamples, o.level, o.seed);
  const auto inside = [&](double a) {  // where a rule's alpha lies against alpha's interval
    if (!law.B_noise) return "no interval (too few resamples fitted)";
    return law.alpha.lo <= a && a <= law.alpha.hi ? "inside the interval" : "outside the interval";
  };
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points) {
    pts.push_back({{"batch_size", p.batch_size},
                   {"lr", p.lr},
                   {"lr_bracket", {p.lr_lo, p.lr_hi}},
                   {"power_law_lr", law.power.c * std::pow(p.batch_size, law.power.alpha)},
                   {"eps_opt", law.noise.eps_max / (1 + law.noise.B_noise / p.batch_size)}});
  }
  fit["lr_law"] = {
      {"fitted", true},
      {"model",
       "best lr = c B^alpha; and eps_opt(B) = eps_max / (1 + B_noise / B) (McCandlish et al. "
       "2018, eq. 2.6); least squares in log lr"},
      {"alpha", law.power.alpha},
      {"c", law.power.c},
      {"linear_rule_alpha_1", inside(1.0)},
      {"sqrt_rule_alpha_0.5", inside(0.5)},
      // No flattening within the range (B_noise at its upper edge): eps_max is the range's
      // artefact, bounded only below (its interval [lo, null]).
      {"eps_max", law.noise.unbounded ? nlohmann::json() : nlohmann::json(law.noise.eps_max)},
      // At the edge of the search range the data shows no flattening (or only flat): not a
      // measurement of B_noise.
      {"B_noise", law.noise.resolved ? nlohmann::json(law.noise.B_noise) : nlohmann::json()},
      {"B_noise_resolved", law.noise.resolved},
      {"points", pts},
      {"edge_points", edges}};  // left out of the law: best LRs at the edge of those tried
  if (law.B_noise) {            // intervals from enough resamples
    fit["intervals"]["lr_law"] = {
        {"resamples", law.resamples},
        {"alpha", interval_json(law.alpha)},
        {"eps_max", interval_json(law.eps_max)},
        {"B_noise",
         {law.B_noise->lo,
          law.B_noise_upper_open ? nlohmann::json() : nlohmann::json(law.B_noise->hi)}}};
  }
}

// fit.json's points: each batch size's median steps, its seeds' brackets and the fitted curve.
nlohmann::json fit_points(const std::vector<MeasuredPoint>& measured,
                          const std::vector<ScalingPoint>& pts, const CriticalBatchFit& f) {
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const ScalingPoint& p = pts[i];
    nlohmann::json brackets = nlohmann::json::array();
    // A censored seed's end is null (json holds inf, which Python's dict would keep).
    for (const auto& b : measured[i].seeds)
      brackets.push_back({finite_or_null(b.lo), finite_or_null(b.hi)});
    points.push_back({{"batch_size", p.batch_size},
                      {"steps", p.steps},
                      {"examples", p.steps * p.batch_size},
                      {"seeds", measured[i].seeds.size()},
                      {"steps_brackets", brackets},
                      {"fitted_steps", f.S_min + f.E_min / p.batch_size}});
  }
  return points;
}

// Local scaling exponent d log S / d log B between neighbours: -1 is perfect scaling, 0 is
// no benefit from a bigger batch (Shallue et al. fig. 1).
nlohmann::json local_slopes(const std::vector<ScalingPoint>& pts) {
  nlohmann::json slopes = nlohmann::json::array();
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const double s = std::log(pts[i + 1].steps / pts[i].steps) /
                     std::log(pts[i + 1].batch_size / pts[i].batch_size);
    slopes.push_back({{"from", pts[i].batch_size}, {"to", pts[i + 1].batch_size}, {"slope", s}});
  }
  return slopes;
}

nlohmann::json regimes_json(const std::vector<ScalingPoint>& pts, double B_crit,
                            const std::vector<CriticalBatchFit>& fits, const FitOptions& o) {
  const RegimeEdges edges = regime_edges(B_crit, o.regime_tolerance);
  nlohmann::json regimes = {{"tolerance", o.regime_tolerance}};
  for (Regime r :
       {Regime::kPerfectScaling, Regime::kDiminishingReturns, Regime::kMaximalDataParallelism}) {
    regimes[regime_name(r)] = regime_range(pts, edges, r, fits, o);
  }
  // Null past any batch size: B_crit above the sweep (+infinity) puts no edge anywhere.
  regimes["perfect_scaling"]["model_max_batch"] = finite_or_null(edges.perfect_max);
  regimes["maximal_data_parallelism"]["model_min_batch"] = finite_or_null(edges.parallel_min);
  return regimes;
}

// fit.json's intervals: all three bootstrap sources together, then each alone (how much of
// the interval seed noise, evaluation resolution and the scatter of batch sizes about the
// model make).
// Where nearly every replicate lies above the sweep, S_min's percentile interval read [0, 0], a
// certainty no measurement gave (2026-11-29 audit): S(B) > S_min at every batch, so the fewest
// steps measured bound it above.
Interval s_min_bounded(Interval i, const std::vector<MeasuredPoint>& measured) {
  if (!(i.hi <= 0.0)) return i;  // a value, or NaN: too few resamples
  i.hi = HUGE_VAL;
  for (const MeasuredPoint& p : measured)
    if (const double m = median_steps(p); std::isfinite(m)) i.hi = std::min(i.hi, m);
  return i;
}

nlohmann::json fit_intervals(const std::vector<MeasuredPoint>& measured,
                             const CriticalBatchFit& point,
                             const std::vector<CriticalBatchFit>& all_sources,
                             const FitOptions& options) {
  const auto intervals = [&](BootstrapSources sources) {
    return intervals_of(
        measurement_bootstrap_fits(measured, sources, options.resamples, options.seed),
        options.level, point);
  };
  const BootstrapIntervals ci = intervals_of(all_sources, options.level, point);
  const BootstrapIntervals by_seeds = intervals({false, true, false});
  const BootstrapIntervals by_resolution = intervals({false, false, true});
  const BootstrapIntervals by_batch_sizes = intervals({true, false, false});
  const auto s_min_and_b_crit = [&](const BootstrapIntervals& i) {
    return nlohmann::json{{"S_min", interval_json(s_min_bounded(i.S_min, measured))},
                          {"B_crit", resolved_interval(i.B_crit, point)}};
  };
  return {{"level", options.level},
          {"resamples", ci.resamples},
          {"resamples_requested", options.resamples},
          {"S_min", interval_json(s_min_bounded(ci.S_min, measured))},
          {"E_min", resolved_interval(ci.E_min, point)},
          {"B_crit", resolved_interval(ci.B_crit, point)},
          {"components",
           {{"seeds", s_min_and_b_crit(by_seeds)},
            {"resolution", s_min_and_b_crit(by_resolution)},
            {"batch_sizes", s_min_and_b_crit(by_batch_sizes)}}}};
}

// An interval's upper end: +infinity where it is open (null: the sweep bounds it only below).
double upper_end(const nlohmann::json& i) {
  return i[1].is_null() ? HUGE_VAL : i[1].get<double>();
}

// Two intervals overlap; an unresolved one (null) is no evidence either way.
bool overlap(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_null() || b.is_null()) return true;
  return a[0].get<double>() <= upper_end(b) && b[0].get<double>() <= upper_end(a);
}

// Unresolved, the fit is the flat line S = S_min, whose S_min is the steps' geometric mean:
// where they rise with the batch it lies above the fewest steps measured, which the model's
// S >= S_min forbids (S_min = 113 [67, 190] over steps from 40: 2026-11-29 audit). S_min is then
// null, as the model does not describe these steps; flat steps keep theirs.
void drop_contradicted_s_min(nlohmann::json& fit, const std::vector<MeasuredPoint>& measured) {
  const nlohmann::json& interval = fit["intervals"]["S_min"];
  if (fit["resolved"].get<bool>() || !interval.is_array() || !interval[0].is_number()) return;
  double fewest = HUGE_VAL;
  for (const MeasuredPoint& p : measured)
    if (const double m = median_steps(p); std::isfinite(m)) fewest = std::min(fewest, m);
  if (!(fewest < interval[0].get<double>())) return;
  fit["S_min"] = nullptr;
  fit["intervals"]["S_min"] = nullptr;
}

}  // namespace

nlohmann::json fit_with_intervals(const std::vector<MeasuredPoint>& points, const FitOptions& o) {
  if (points.size() < 3)
    return {{"fitted", false}, {"why", "fewer than 3 batch sizes reached the target"}};
  const CriticalBatchFit f = fit_critical_batch(point_estimates(points));
  const BootstrapIntervals ci = intervals_of(
      measurement_bootstrap_fits(points, {true, true, true}, o.resamples, o.seed), o.level, f);
  nlohmann::json out = {{"fitted", true},
                        {"batch_sizes", points.size()},
                        {"S_min", s_min_value(f)},
                        {"E_min", resolved_value(f.E_min, f)},
                        {"B_crit", b_crit_value(f)},
                        {"intervals",
                         {{"S_min", interval_json(ci.S_min)},
                          {"E_min", resolved_interval(ci.E_min, f)},
                          {"B_crit", resolved_interval(ci.B_crit, f)}}}};
  add_resolution(out, f);
  return out;
}

nlohmann::json fit_sensitivity(const std::map<std::string, std::vector<MeasuredPoint>>& readings,
                               const std::string& definition, const FitOptions& options,
                               const CensoredByReading& censored) {
  nlohmann::json out = {{"readings", nlohmann::json::object()}};
  std::vector<std::string> fitted;
  for (const auto& [name, points] : readings) {
    out["readings"][name] = fit_with_intervals(points, options);
    const auto left_out = censored.find(name);
    out["readings"][name]["batch_sizes_censored"] =
        censored_json(left_out == censored.end() ? std::vector<CensoredPoint>{} : left_out->second);
    if (out["readings"][name]["fitted"].get<bool>()) fitted.push_back(name);
  }
  std::string disagree;
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    for (std::size_t j = i + 1; j < fitted.size(); ++j) {
      const auto& a = out["readings"][fitted[i]]["intervals"];
      const auto& b = out["readings"][fitted[j]]["intervals"];
      for (const char* q : {"S_min", "E_min", "B_crit"}) {
        if (!overlap(a[q], b[q]))
          disagree += std::string(disagree.empty() ? "" : ", ") + q + " (" + fitted[i] + " " +
                      interval_text(a[q]) + " vs " + fitted[j] + " " + interval_text(b[q]) + ")";
      }
    }
  }
  out["agree"] = fitted.size() < 2 ? nlohmann::json() : nlohmann::json(disagree.empty());
  if (disagree.empty()) {
    out["warning"] = nullptr;
    return out;
  }
  const std::string advice =
      definition == "ema"
          ? "the fit reads the EMA, the reading that noise moves least; a lower target makes "
            "them agree"
          : "lower it, or use train.target_definition=ema";
  out["warning"] = "the readings of steps-to-target disagree beyond their intervals: " + disagree +
                   "; the target sits in the metric's noise: " + advice;
  return out;
}

nlohmann::json fit_measurements(const SweepMeasurements& sweep, const FitOptions& options) {
  const std::vector<ScalingPoint> pts = point_estimates(sweep.measured);
  const CriticalBatchFit f = fit_critical_batch(pts);
  const std::vector<CriticalBatchFit> fits = measurement_bootstrap_fits(
      sweep.measured, {true, true, true}, options.resamples, options.seed);
  nlohmann::json fit = {
      {"model", "S = S_min * (1 + B_crit / B);  E = S * B;  B_crit = E_min / S_min"},
      {"method",
       "least squares in log S (Gauss-Newton from the 1/S^2-weighted line S = a + b/B and from "
       "each edge's optimum, S flat and S = E_min/B, the least loss taken) of the median over "
       "seeds of steps_hi; percentile bootstrap resampling batch sizes, seeds within each, and "
       "drawing each seed's step with its bracket's spread, uniform over steps_hi - steps_lo "
       "whole steps centred on steps_hi"},
      {"S_min", s_min_value(f)},
      {"E_min", resolved_value(f.E_min, f)},
      {"B_crit", b_crit_value(f)},
      {"rms_log_residual", f.rms_log_residual},
      {"intervals", fit_intervals(sweep.measured, f, fits, options)},
      {"points", fit_points(sweep.measured, pts, f)},
      {"local_slopes", local_slopes(pts)},
      {"regimes",
       f.resolved ? regimes_json(pts, b_crit_or_infinity(f), fits, options) : nlohmann::json()},
  };
  add_resolution(fit, f);
  drop_contradicted_s_min(fit, sweep.measured);
  const char* extrapolated = b_crit_extrapolated(pts, f);
  fit["b_crit_extrapolated"] = extrapolated ? nlohmann::json(extrapolated) : nlohmann::json();
  if (!f.resolved) fit["warning"] = kNoCriticalBatch;
  if (f.above_sweep) fit["warning"] = kCriticalBatchAboveSweep;
  fit["batch_sizes_unreached"] = sweep.unreached;
  fit["batch_sizes_censored"] = censored_json(sweep.censored);
  fit["batch_sizes_with_unmeasured_seeds"] = unmeasured_seeds_json(sweep.measured);
  add_lr_law(fit, sweep.lr_points, options);
  add_measured_noise(fit, sweep, options);
  fit["target_definition"] =
      sweep.definition.empty() ? nlohmann::json() : nlohmann::json(sweep.definition);
  fit["sensitivity"] = sweep.readings.empty() ? nlohmann::json()
                                              : fit_sensitivity(sweep.readings, sweep.definition,
                                                                options, sweep.readings_censored);
  return fit;
}

}  // namespace lbt::analysis
