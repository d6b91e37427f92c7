// The pure parts of lbt plan; see plan.hpp.
#include "analysis/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace lbt::analysis {
namespace {

std::string num(double x) {
  return plan_number(x);
}

// S(B) <= S: B >= B_noise / (S / S_min - 1); the smallest such B uses the fewest examples.
std::int64_t batch_for_max_steps(std::int64_t max_steps, const CriticalBatchFit& f) {
  if (static_cast<double>(max_steps) <= f.S_min) {
    throw ConfigError(
        "a step budget of " + std::to_string(max_steps) +
            " cannot reach the target: no batch size takes fewer than S_min = " + num(f.S_min) +
            " steps",
        "allow at least " + std::to_string(static_cast<std::int64_t>(std::ceil(f.S_min * 1.25))) +
            " steps (S_min x 1.25, at a batch of 4 B_crit)");
  }
  const double B = f.B_noise / (static_cast<double>(max_steps) / f.S_min - 1.0);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(B - 1e-9)));
}

// E(B) = E_min (1 + B / B_noise) <= E: the largest such B takes the fewest steps.
std::int64_t batch_for_max_examples(std::int64_t max_examples, const CriticalBatchFit& f) {
  if (static_cast<double>(max_examples) <= f.E_min) {
    throw ConfigError(
        "an example budget of " + std::to_string(max_examples) +
            " cannot reach the target: no batch size uses fewer than E_min = " + num(f.E_min) +
            " examples",
        "allow at least " + std::to_string(static_cast<std::int64_t>(std::ceil(f.E_min * 1.25))) +
            " examples (E_min x 1.25, at a batch of B_crit / 4)");
  }
  const double B = f.B_noise * (static_cast<double>(max_examples) / f.E_min - 1.0);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(B + 1e-9)));
}

}  // namespace

std::string plan_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::int64_t batch_for_budget(const PlanBudget& o, const CriticalBatchFit& f) {
  const int budgets = (o.workers > 0) + (o.max_steps > 0) + (o.max_examples > 0);
  if (budgets != 1) {
    throw ConfigError("a plan needs exactly one budget, got " + std::to_string(budgets),
                      "give workers with their micro-batch, or a step budget, or an example "
                      "budget");
  }
  if (o.workers > 0) {
    if (o.micro_batch <= 0) {
      throw ConfigError("a workers budget needs the micro-batch (examples per worker and step)",
                        "give both, e.g. 8 workers of 64 examples");
    }
    return o.workers * o.micro_batch;
  }
  if (o.max_steps > 0) return batch_for_max_steps(o.max_steps, f);
  return batch_for_max_examples(o.max_examples, f);
}

Prediction predict_at(std::int64_t B, const CriticalBatchFit& fit,
                      const std::vector<CriticalBatchFit>& replicates, double level) {
  const double Bd = static_cast<double>(B);
  std::vector<double> steps, examples;
  for (const auto& f : replicates) {
    // S_min (1 + B_noise / B) as S_min + E_min / B: a replicate above the sweep may hold
    // S_min = 0 and B_noise = inf, whose product is NaN.
    steps.push_back(f.S_min + f.E_min / Bd);
    examples.push_back(steps.back() * Bd);
  }
  Prediction p;
  p.steps = fit.S_min + fit.E_min / Bd;
  p.examples = p.steps * Bd;
  // Too few replicates (none where the bootstrap had nothing to vary): NaN ends, no interval.
  p.steps_interval = percentile_interval(steps, level, p.steps);
  p.examples_interval = percentile_interval(examples, level, p.examples);
  return p;
}

namespace {

// "x [lo, hi]" of `scale` times r = B / B_crit (or its inverse) and r's interval: a bare
// ratio beside B_crit = 81.6 [0, unbounded] claimed what the fit did not measure.
std::string ratio_text(double r, Interval ri, double scale, bool inverse, const char* unit) {
  const auto f = [&](double x) { return scale * (inverse ? 1.0 / x : x); };
  std::string text = num(f(r)) + unit;
  if (!std::isfinite(ri.lo)) return text;
  const double lo = inverse ? f(ri.hi) : f(ri.lo), hi = inverse ? f(ri.lo) : f(ri.hi);
  return text + " [" + num(lo) + unit + ", " + (std::isfinite(hi) ? num(hi) + unit : "unbounded") +
         "]";
}

// Why B is in `regime` of the fitted curve, in units of B_crit: r = B / B_crit, and E(B) / E_min
// - 1 = r and S(B) / S_min - 1 = 1 / r on the fitted curve.
std::string regime_reason(Regime regime, double r, Interval ri) {
  const std::string examples = ratio_text(r, ri, 100, false, "%");
  const std::string steps = ratio_text(r, ri, 100, true, "%");
  const std::string where = "B is " + ratio_text(r, ri, 1, false, "") + " x B_crit: ";
  switch (regime) {
    case Regime::kPerfectScaling:
      return where + "examples to target are within " + examples +
             " of E_min, so doubling B about halves the steps";
    case Regime::kMaximalDataParallelism:
      return where + "steps are within " + steps +
             " of S_min, so a larger batch buys almost no steps, only cost";
    case Regime::kDiminishingReturns:
      break;
  }
  return where + "steps are " + steps + " above S_min and examples " + examples + " above E_min";
}

}  // namespace

RegimeCall regime_at(std::int64_t B, double B_crit, double tolerance,
                     const std::vector<CriticalBatchFit>& replicates, double level) {
  const double Bd = static_cast<double>(B);
  RegimeCall call{regime_of(Bd, regime_edges(B_crit, tolerance))};
  std::vector<double> ratios;
  for (const CriticalBatchFit& f : replicates)
    ratios.push_back(Bd / b_crit_or_infinity(f));  // 0 above the sweep
  call.agreement = regime_agreement(Bd, call.regime, tolerance, replicates, level);
  call.b_over_b_crit = Bd / B_crit;
  call.b_over_b_crit_interval = percentile_interval(ratios, level, call.b_over_b_crit);
  call.why = regime_reason(call.regime, call.b_over_b_crit, call.b_over_b_crit_interval);
  return call;
}

namespace {

// exp((1 - t) log a + t log b): a straight line between two points on a log-log plot.
double log_between(double a, double b, double t) {
  return std::exp((1.0 - t) * std::log(a) + t * std::log(b));
}

}  // namespace

LrChoice lr_at(std::int64_t B, const std::vector<LrPoint>& reached, double rule_lr,
               const std::string& rule_source) {
  std::vector<LrPoint> p = searched_lr_points(reached);
  if (p.size() < 3) return {rule_lr, std::nan(""), std::nan(""), rule_source};
  std::sort(p.begin(), p.end(),
            [](const LrPoint& a, const LrPoint& b) { return a.batch_size < b.batch_size; });
  const double Bd = static_cast<double>(B);
  // Inside the sweep: its own best LRs, which its steps S(B) were measured at (so the
  // predicted steps hold for them), between two batch sizes on a straight log-log line. The
  // power law fitted over all of them reads 0.6x the best LR at a measured batch where the best
  // LRs bend (2026-11-29 audit: the plan's runs took 7-8 steps against 5.3 [4.9, 5.6]).
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    const LrPoint &a = p[i], &b = p[i + 1];
    if (Bd < a.batch_size || Bd > b.batch_size) continue;
    if (Bd == a.batch_size || Bd == b.batch_size) {
      const LrPoint& at = Bd == a.batch_size ? a : b;
      const std::string where =
          lr_bracketed(at) ? "searched: the optimum lies between its neighbours"
          : at.lr_hi == HUGE_VAL
              ? "the largest LR tried there: the optimum may lie above it, its interval is open"
              : "the smallest LR tried there: the optimum may lie below it";
      return {at.lr, at.lr_lo, at.lr_hi,
              "the sweep's best LR at batch " + num(Bd) + " (" + where + ")"};
    }
    const double t = std::log(Bd / a.batch_size) / std::log(b.batch_size / a.batch_size);
    return {log_between(a.lr, b.lr, t), log_between(a.lr_lo, b.lr_lo, t),
            log_between(a.lr_hi, b.lr_hi, t),
            "the sweep's best LRs at batches " + num(a.batch_size) + " and " + num(b.batch_size) +
                ", between them on a log-log line"};
  }
  // Past the sweep, the law of the best LRs found inside the LRs tried (sweep_fit's lr_law).
  std::erase_if(p, [](const LrPoint& q) { return !lr_bracketed(q); });
  if (p.size() < 3) return {rule_lr, std::nan(""), std::nan(""), rule_source};
  const PowerLaw law = fit_power_law(p);
  // With the interval of the law's bootstrap (it was a bare number: 2026-11-30 audit).
  const Interval ci = power_law_lr_interval(p, Bd, 2000, 0.95, 0);
  return {law.c * std::pow(Bd, law.alpha), ci.lo, ci.hi,
          "the sweep's LR law lr = " + num(law.c) + " x B^" + num(law.alpha) + " over " +
              std::to_string(p.size()) + " batch sizes, extrapolated: B is outside the swept " +
              num(p.front().batch_size) + ".." + num(p.back().batch_size)};
}

}  // namespace lbt::analysis
