// The best trials' measured noise scales in fit.json; see measured_noise.hpp and sweep_fit.hpp.
#include "analysis/measured_noise.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/rng.hpp"

namespace lbt::analysis {
namespace {

Interval bootstrap_median(const std::vector<double>& values, const FitOptions& options,
                          std::uint64_t stream) {
  auto rng = make_rng(options.seed, RngStream::kSweep, stream);
  std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
  std::vector<double> medians, sample(values.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (auto& v : sample) v = values[pick(rng)];
    medians.push_back(median(sample));
  }
  return percentile_interval(medians, options.level, median(values));
}

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

MeasuredBSimple measured_b_simple(const BSimpleReadings& r, const FitOptions& options,
                                  std::uint64_t stream) {
  const std::vector<double> keys = keys_of(r);
  MeasuredBSimple b{median(keys), std::nullopt};
  if (keys.size() >= 2) b.interval = bootstrap_median(keys, options, stream);
  if (r.at_least.empty()) return b;
  if (!b.interval) b.interval = Interval{b.median, b.median};
  b.interval->hi = HUGE_VAL;  // no resample bounds it above
  if (!median_known(r)) b.median = NAN;
  return b;
}

MeasuredRatio b_crit_over_b_simple(const std::vector<MeasuredPoint>& measured,
                                   const BSimpleReadings& readings, const FitOptions& options) {
  MeasuredRatio out;
  const CriticalBatchFit point = fit_critical_batch(point_estimates(measured));
  const std::vector<double> b_simple_averaged = keys_of(readings);
  if (b_simple_averaged.empty() || !point.b_crit_measured()) return out;
  if (!readings.at_least.empty() && !median_known(readings)) return out;
  out.value = point.B_crit / median(b_simple_averaged);
  if (b_simple_averaged.size() < 2) return out;
  const std::vector<CriticalBatchFit> fits =
      measurement_bootstrap_fits(measured, {true, true, true}, options.resamples, options.seed);
  if (fits.empty()) return out;  // nothing to resample: no interval
  auto rng = make_rng(options.seed, RngStream::kSweep, 0xB52);
  std::uniform_int_distribution<std::size_t> pick(0, b_simple_averaged.size() - 1);
  std::vector<double> ratios, sample(b_simple_averaged.size());
  for (const CriticalBatchFit& f : fits) {
    for (double& b : sample) b = b_simple_averaged[pick(rng)];
    ratios.push_back(b_crit_or_infinity(f) / median(sample));
  }
  out.interval = percentile_interval(ratios, options.level, *out.value);
  if (!readings.at_least.empty()) out.interval->lo = 0.0;  // the ratios read are upper bounds
  return out;
}

// The measured noise scale of the best trials beside the fitted B_crit (McCandlish et al.
// predict B_crit ~ B_noise, with B_simple its proxy): the median of their averaged B_simple,
// with a percentile-bootstrap interval over those trials; null where none measured it. Then
// B_noise (eq. 2.8) as the best trials' Hessian probes measured it (noise.hessian.every): the
// median of their medians, with a bootstrap interval over trials; null where none did.
void add_measured_noise(nlohmann::json& fit, const SweepMeasurements& sweep,
                        const FitOptions& options) {
  const BSimpleReadings& averaged = sweep.b_simple_avg;
  const auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; };
  fit["B_simple"] = nullptr;
  fit["B_simple_start"] = nullptr;
  fit["B_simple_trials"] = averaged.size();
  fit["intervals"]["B_simple_start"] = nullptr;
  if (!sweep.b_simple_start.empty()) {
    const MeasuredBSimple start = measured_b_simple(sweep.b_simple_start, options, 0xB53);
    fit["B_simple_start"] = number(start.median);
    if (start.interval) fit["intervals"]["B_simple_start"] = interval_json(*start.interval);
  }
  fit["b_crit_over_b_simple"] = nullptr;
  fit["intervals"]["B_simple"] = nullptr;
  fit["intervals"]["b_crit_over_b_simple"] = nullptr;
  if (!averaged.empty()) {
    const MeasuredBSimple b_simple = measured_b_simple(averaged, options);
    fit["B_simple"] = number(b_simple.median);
    if (b_simple.interval) fit["intervals"]["B_simple"] = interval_json(*b_simple.interval);
    const MeasuredRatio ratio = b_crit_over_b_simple(sweep.measured, averaged, options);
    fit["b_crit_over_b_simple"] = ratio.value ? nlohmann::json(*ratio.value) : nlohmann::json();
    if (ratio.interval) fit["intervals"]["b_crit_over_b_simple"] = interval_json(*ratio.interval);
  }
  const std::vector<double>& b_noise = sweep.b_noise;
  fit["B_noise_measured"] = b_noise.empty() ? nlohmann::json() : nlohmann::json(median(b_noise));
  fit["B_noise_measured_trials"] = b_noise.size();
  fit["intervals"]["B_noise_measured"] =
      b_noise.size() >= 2 ? interval_json(bootstrap_median(b_noise, options, 0xB40))
                          : nlohmann::json();
}

}  // namespace lbt::analysis
