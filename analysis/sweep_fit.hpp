// A sweep's fit.json from its measurements: the critical-batch fit (critical_batch.hpp) with
// bootstrap intervals over batch sizes, seeds and brackets (measured_fit.hpp), Shallue et
// al.'s three regimes as batch-size ranges (regimes.hpp), the LR-vs-batch law (lr_law.hpp),
// and the measured B_simple / B_noise of the best trials (McCandlish et al. 2018) beside
// B_crit. Pure: reading the sweep directory and writing fit.json is
// experiments/sweep/fit_files.hpp's.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/critical_batch.hpp"
#include "analysis/lr_law.hpp"
#include "analysis/measured_fit.hpp"

namespace lbt::analysis {

struct FitOptions {
  int resamples = 2000;
  double level = 0.95;
  std::uint64_t seed = 0;
  // Regime edges: perfect scaling while E(B) <= (1 + tolerance) E_min, i.e. B <= tolerance *
  // B_crit; maximal data parallelism once S(B) <= (1 + tolerance) S_min, i.e. B >= B_crit /
  // tolerance; diminishing returns in between.
  double regime_tolerance = 0.2;
};

// What a sweep measured, as the fit needs it.
// The best trials' B_simple readings (best.csv's b_simple_avg or b_simple_start): the values, and
// lower bounds where a trial's is unresolved (its cell empty, its _lo set: too large to resolve).
struct BSimpleReadings {
  std::vector<double> values, at_least;
  // Trials that measured and bounded nothing (a lower bound of 0): counted, not in the median,
  // where an "at least 0" would only pull the others' bound down.
  int unbounded = 0;
  std::size_t size() const { return values.size() + at_least.size(); }
  bool empty() const { return size() == 0; }
};

struct SweepMeasurements {
  std::vector<MeasuredPoint> measured;  // per batch size whose best trial reached the target
  std::vector<CensoredPoint> censored;  // ... but whose median over seeds is censored: left out
  std::vector<double> unreached;        // batch sizes whose best trial did not
  std::vector<LrPoint> lr_points;       // best LR and its bracket per reached batch size
  BSimpleReadings b_simple_avg;         // the best trials' B_simple averaged over training
  BSimpleReadings b_simple_start;       // ... and at the start of training
  std::vector<double> b_noise;          // the best trials' Hessian-probe B_noise
  // The reading of steps-to-target `measured` uses (train.target_definition; "" when
  // not recorded), and the same best trials under each reading recorded (by name: ema,
  // first_passage), for fit.json's sensitivity.
  std::string definition;
  std::map<std::string, std::vector<MeasuredPoint>> readings;
  std::map<std::string, std::vector<CensoredPoint>> readings_censored;  // left out of each one
};

// The distribution-free interval of the median of `values` (order statistics), with the
// probability it holds the median of the distribution they come from: at least `level` where
// there are enough values (6 at 95%), else [min, max] with its lower coverage.
struct MedianInterval {
  Interval interval;
  double coverage = 0.0;
};
MedianInterval median_interval(std::vector<double> values, double level);

// The best trials' measured B_simple as fit.json and lbt plan show it: the median of their
// averaged B_simple, with median_interval over those trials (null below 2). A
// trial's lower bound counts at its bound, so each median read is a lower bound: the median is
// known where every bound sits above the middle, its interval then open above; else NaN, the
// interval [lower bound, open] (trials whose B_simple was only bounded were dropped, and the
// median read the small ones: 2026-11-29 audit).
struct MeasuredBSimple {
  double median = 0.0;               // NaN: only bounded below
  std::optional<Interval> interval;  // hi = +inf: open above
  double coverage = NAN;             // the interval's (median_interval), where it has one
};
MeasuredBSimple measured_b_simple(const BSimpleReadings& readings, const FitOptions& options);

// B_crit / B_simple (McCandlish et al. 2018 predict B_crit ~ B_noise, B_simple its proxy) with
// the interval [B_crit lo / B_simple hi, B_crit hi / B_simple lo] of fit.json's B_crit interval
// (all-sources bootstrap, measured_fit.hpp) and measured_b_simple's: it holds the ratio wherever
// both hold theirs, so its coverage is at least level + B_simple's coverage - 1 (Bonferroni;
// their correlation through the same trials need not be modelled). No value where the fit
// resolves no critical batch or B_simple is not known; no interval below 2 trials; where some
// trials' B_simple are lower bounds, B_simple's interval is open above and the ratio's starts
// at 0.
struct MeasuredRatio {
  std::optional<double> value;
  std::optional<Interval> interval;
  double coverage = NAN;  // a lower bound of the interval's
};
MeasuredRatio b_crit_over_b_simple(const std::vector<MeasuredPoint>& measured,
                                   const BSimpleReadings& b_simple_averaged,
                                   const FitOptions& options);

// S_min, E_min and B_crit of `points` with the all-sources bootstrap interval of each, as
// fit.json's sensitivity gives each reading and plan.json its fit: {"fitted": false, "why"}
// below 3 batch sizes; E_min and B_crit null where no critical batch is resolved, B_crit where
// it lies above the sweep.
nlohmann::json fit_with_intervals(const std::vector<MeasuredPoint>& points,
                                  const FitOptions& options);

// fit.json's sensitivity: S_min, E_min and B_crit with intervals under each reading (null with
// a reason below 3 batch sizes), and a warning when two readings' intervals of any of them do
// not overlap: the target then sits in the metric's noise. Its advice follows `definition`,
// the reading the headline fit used: ema is already the well-conditioned one. Each reading lists
// the batch sizes `censored` left out of it (batch_sizes_censored).
using CensoredByReading = std::map<std::string, std::vector<CensoredPoint>>;
nlohmann::json fit_sensitivity(const std::map<std::string, std::vector<MeasuredPoint>>& readings,
                               const std::string& definition, const FitOptions& options,
                               const CensoredByReading& censored = {});

// fit.json's content. Throws lbt::Error when fewer than 3 distinct batch sizes reached the
// target (the caller names the sweep's files in its own, earlier check).
nlohmann::json fit_measurements(const SweepMeasurements& sweep, const FitOptions& options);

// "S_min = 1234 [1100, 1400], E_min = ..., B_crit = ..." for progress lines ("[no interval]"
// where every resample gave the same value); a second line
// "warning: ..." when the sensitivity's readings disagree.
std::string format_fit_line(const nlohmann::json& fit);

// An interval as fit.json and plan.json write it: [lo, hi]; [lo, null] where it is open above
// (hi = +infinity: B_crit above the sweep in more than the tail's share of replicates); null
// where the bootstrap had nothing to resample (intervals_of: NaN ends) or lo is infinite too.
nlohmann::json interval_json(Interval i);

// An interval of fit.json or plan.json as reports print it: "[lo, hi]" to four significant
// digits, "[lo, unbounded]" where it is open above (null upper end).
std::string interval_text(const nlohmann::json& interval);

// A measurement from fit.json or plan.json as reports print it: "X " and its interval_text,
// then " (interval_note)" where given; "X (no interval: one trial, or no spread)" where `ci` is
// null; "unresolved" where `value` is, "unresolved (>= lo)" where its interval bounds it below
// (open above), "unresolved (<= hi)" where it bounds it above (S_min above the sweep: [0, hi]).
std::string measured_text(const nlohmann::json& value, const nlohmann::json& ci,
                          const std::string& interval_note = "");

// measured_text's note for an interval of fit.json's interval_coverage (or plan.json's): "99.2%";
// "only 75%: too few trials for 95%" below `level`; ">= 94%" where the coverage is a lower
// bound (the ratio to B_crit); "" where null.
std::string coverage_note(const nlohmann::json& coverage, double level, bool lower_bound = false);

// The noise the sweep's best trials measured, as `lbt fit` and `lbt sweep` print it: a line for
// B_simple (with B_crit / B_simple) and one for the Hessian probes' B_noise, each where fit.json
// holds it (a value or a bound); "" where it holds neither (lbt sweep left them out, and neither
// printed B_noise: 2026-11-30 audit).
std::string format_measured_noise(const nlohmann::json& fit);

}  // namespace lbt::analysis
