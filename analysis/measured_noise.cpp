// The best trials' measured noise scales in fit.json; see measured_noise.hpp and sweep_fit.hpp.
#include "analysis/measured_noise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/json_number.hpp"

namespace lbt::analysis {
namespace {

// P(Binomial(n, 1/2) <= k), from log-probabilities (2^-n underflows past n = 1074).
double binomial_half_cdf(std::size_t n, std::size_t k) {
  double sum = 0.0;
  for (std::size_t i = 0; i <= k; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                    static_cast<double>(n) * std::log(2.0));
  return sum;
}

}  // namespace

// Distribution-free (Thompson 1936; Hahn & Meeker, Statistical Intervals, 2nd ed., sec. 5.3):
// the sorted values' [x(k), x(n+1-k)] holds the median of any continuous distribution they are
// drawn from with probability 1 - 2 P(Binomial(n, 1/2) <= k-1). The largest k whose coverage
// reaches `level`; below 6 values none reaches 95%, and [min, max] comes with its own (2 values:
// 50%). A percentile bootstrap of the median gave [min, max] there and called it 95%.
MedianInterval median_interval(std::vector<double> values, double level) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const auto coverage = [n](std::size_t k) { return 1.0 - 2.0 * binomial_half_cdf(n, k - 1); };
  std::size_t k = 1;
  while (2 * (k + 1) <= n && coverage(k + 1) >= level) ++k;
  return {{values[k - 1], values[n - k]}, coverage(k)};
}

namespace {

// The readings with each bound at its value: every median of them is a lower bound of the true.
std::vector<double> keys_of(const BSimpleReadings& r) {
  std::vector<double> keys = r.values;
  keys.insert(keys.end(), r.at_least.begin(), r.at_least.end());
  return keys;
}

// Whether the median of keys_of(r) is the true median: every bound lies above the middle (its
// trial then sits above it whatever its value).
bool median_known(const BSimpleReadings& r) {
  std::vector<double> keys = keys_of(r);
  std::sort(keys.begin(), keys.end());
  const double upper_middle = keys[keys.size() / 2];
  return std::all_of(r.at_least.begin(), r.at_least.end(),
                     [&](double bound) { return bound > upper_middle; });
}

}  // namespace

MeasuredBSimple measured_b_simple(const BSimpleReadings& r, const FitOptions& options) {
  const std::vector<double> keys = keys_of(r);
  MeasuredBSimple b{median(keys), std::nullopt, NAN};
  if (keys.size() >= 2) {
    const MedianInterval m = median_interval(keys, options.level);
    b.interval = m.interval;
    b.coverage = m.coverage;
  }
  if (r.at_least.empty()) return b;
  if (!b.interval) b.interval = Interval{b.median, b.median};
  b.interval->hi = HUGE_VAL;  // nothing bounds it above
  if (!median_known(r)) b.median = NAN;
  return b;
}

MeasuredRatio b_crit_over_b_simple(const std::vector<MeasuredPoint>& measured,
                                   const BSimpleReadings& readings, const FitOptions& options) {
  MeasuredRatio out;
  const CriticalBatchFit point = fit_critical_batch(point_estimates(measured));
  if (readings.empty() || !point.b_crit_measured()) return out;
  const MeasuredBSimple b_simple = measured_b_simple(readings, options);
  // No gradient noise (B_simple 0): the ratio has no value, and its interval no upper end.
  if (!(b_simple.median > 0.0)) return out;
  out.value = point.B_crit / b_simple.median;
  if (readings.size() < 2) return out;  // one trial: no spread to read
  const std::vector<CriticalBatchFit> fits =
      measurement_bootstrap_fits(measured, {true, true, true}, options.resamples, options.seed);
  if (fits.empty()) return out;  // nothing to resample: no interval
  std::vector<double> b_crit;
  for (const CriticalBatchFit& f : fits) b_crit.push_back(b_crit_or_infinity(f));
  const Interval crit = percentile_interval(b_crit, options.level, b_crit_or_infinity(point));
  const double lowest = b_simple.interval->lo;
  out.interval =
      Interval{crit.lo / b_simple.interval->hi,
               lowest > 0.0 ? crit.hi / lowest : std::numeric_limits<double>::infinity()};
  out.coverage = std::max(0.0, options.level + b_simple.coverage - 1.0);  // Bonferroni
  return out;
}

// The measured noise scale of the best trials beside the fitted B_crit (McCandlish et al.
// predict B_crit ~ B_noise, with B_simple its proxy): the median of their averaged B_simple,
// with median_interval over those trials; null where none measured it. Then B_noise (eq. 2.8)
// as the best trials' Hessian probes measured it (noise.hessian.every): the median of their
// medians, likewise; null where none did. interval_coverage holds each interval's confidence.
void add_measured_noise(nlohmann::json& fit, const SweepMeasurements& sweep,
                        const FitOptions& options) {
  nlohmann::json& intervals = fit["intervals"];
  nlohmann::json& coverage = fit["interval_coverage"];
  const auto put = [&](const char* key, const MeasuredBSimple& m) {
    fit[key] = finite_or_null(m.median);
    intervals[key] = m.interval ? interval_json(*m.interval) : nlohmann::json();
    coverage[key] = finite_or_null(m.coverage);
  };
  const MeasuredBSimple none{NAN, std::nullopt, NAN};
  const BSimpleReadings& averaged = sweep.b_simple_avg;
  fit["B_simple_trials"] = averaged.size();
  put("B_simple", averaged.empty() ? none : measured_b_simple(averaged, options));
  // Best trials that measured and bounded nothing are not in the median but counted: the
  // median of the others rests on fewer trials, and where none bounded it, [0, null] says it
  // was measured (not the nulls of no measurement).
  fit["B_simple_unbounded_trials"] = averaged.unbounded;
  if (averaged.empty() && averaged.unbounded > 0)
    intervals["B_simple"] = nlohmann::json::array({0.0, nullptr});
  put("B_simple_start",
      sweep.b_simple_start.empty() ? none : measured_b_simple(sweep.b_simple_start, options));
  const MeasuredRatio ratio = b_crit_over_b_simple(sweep.measured, averaged, options);
  fit["b_crit_over_b_simple"] = ratio.value ? nlohmann::json(*ratio.value) : nlohmann::json();
  intervals["b_crit_over_b_simple"] =
      ratio.interval ? interval_json(*ratio.interval) : nlohmann::json();
  coverage["b_crit_over_b_simple"] = ratio.interval ? finite_or_null(ratio.coverage) : nullptr;
  fit["B_noise_measured_trials"] = sweep.b_noise.size();
  put("B_noise_measured",
      sweep.b_noise.empty() ? none : measured_b_simple({sweep.b_noise, {}}, options));
}

}  // namespace lbt::analysis
