// The measurement bootstrap; see measured_fit.hpp.
#include "analysis/measured_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "core/json_number.hpp"
#include "core/rng.hpp"

namespace lbt::analysis {

// One seed's steps-to-target with its bracket's spread: a uniform draw over the bracket's
// whole steps (lo, hi], moved to centre on steps_hi. The point estimate reads steps_hi; draws
// left in (lo, hi] all lay below it, so the replicates sat about half a bracket below the
// estimate and the interval could miss it (E_min = 2.005e4 [0, 1.991e4] with 3 batch sizes,
// where resampling batch sizes changes nothing). The spread is the resolution's uncertainty;
// where the crossing lies within the bracket is the reading's convention (steps_hi), not noise.
double draw_in_bracket(const BracketedSteps& b, std::mt19937_64& rng) {
  if (b.censored()) return b.hi;
  const auto width = static_cast<std::int64_t>(std::llround(b.hi - b.lo));
  if (width <= 1) return b.hi;
  const double draw =
      static_cast<double>(std::uniform_int_distribution<std::int64_t>(0, width - 1)(rng));
  return b.hi + draw - 0.5 * static_cast<double>(width - 1);  // mean steps_hi
}

namespace {

// Points by batch size, then steps: a resample compares with the sweep whatever its order.
std::vector<ScalingPoint> sorted(std::vector<ScalingPoint> points) {
  std::sort(points.begin(), points.end(), [](const ScalingPoint& a, const ScalingPoint& b) {
    return a.batch_size != b.batch_size ? a.batch_size < b.batch_size : a.steps < b.steps;
  });
  return points;
}

bool same_points(const std::vector<ScalingPoint>& a, const std::vector<ScalingPoint>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const ScalingPoint& x, const ScalingPoint& y) {
                      return x.batch_size == y.batch_size && x.steps == y.steps;
                    });
}

// The median of seeds' steps where `above` holds each censored seed's steps at +infinity and
// `at_least` at its lo (the others alike in both): the median where both agree, else NaN.
double censored_median(const std::vector<double>& above, const std::vector<double>& at_least) {
  const double m = median(above);
  return std::isfinite(m) && m == median(at_least) ? m : std::numeric_limits<double>::quiet_NaN();
}

// One batch size's steps in a resample: its seeds (resampled or not), each at steps_hi or a
// draw from its bracket, then their median (NaN where censored seeds leave it unknown).
double resampled_steps(const MeasuredPoint& p, BootstrapSources sources, std::mt19937_64& rng) {
  std::vector<double> above(p.seeds.size()), at_least(p.seeds.size());
  std::uniform_int_distribution<std::size_t> pick(0, p.seeds.size() - 1);
  for (std::size_t i = 0; i < above.size(); ++i) {
    const BracketedSteps& b = p.seeds[sources.seeds ? pick(rng) : i];
    above[i] = sources.resolution ? draw_in_bracket(b, rng) : b.hi;
    at_least[i] = b.censored() ? b.lo : above[i];
  }
  return censored_median(above, at_least);
}

}  // namespace

double median_steps(const MeasuredPoint& point) {
  std::vector<double> above, at_least;
  for (const auto& b : point.seeds) {
    above.push_back(b.hi);
    at_least.push_back(b.censored() ? b.lo : b.hi);
  }
  return censored_median(above, at_least);
}

double median_steps_at_least(const MeasuredPoint& point) {
  std::vector<double> at_least;
  for (const auto& b : point.seeds) at_least.push_back(b.censored() ? b.lo : b.hi);
  return median(at_least);
}

std::vector<CensoredPoint> leave_out_censored(std::vector<MeasuredPoint>& points) {
  std::vector<CensoredPoint> out;
  std::erase_if(points, [&](const MeasuredPoint& p) {
    if (!std::isnan(median_steps(p))) return false;
    const auto reached = static_cast<std::size_t>(std::count_if(
        p.seeds.begin(), p.seeds.end(), [](const BracketedSteps& b) { return !b.censored(); }));
    out.push_back({p.batch_size, median_steps_at_least(p), p.seeds.size(), reached});
    return true;
  });
  return out;
}

std::vector<ScalingPoint> point_estimates(const std::vector<MeasuredPoint>& points) {
  std::vector<ScalingPoint> out;
  for (const auto& p : points) out.push_back({p.batch_size, median_steps(p)});
  return out;
}

std::vector<CriticalBatchFit> measurement_bootstrap_fits(const std::vector<MeasuredPoint>& points,
                                                         BootstrapSources sources, int resamples,
                                                         std::uint64_t seed) {
  fit_critical_batch(point_estimates(points));  // validates: >= 3 batch sizes, positive steps
  auto rng = make_rng(seed, RngStream::kSweep, 0xB007);
  std::uniform_int_distribution<std::size_t> pick(0, points.size() - 1);
  std::vector<CriticalBatchFit> fits;
  std::vector<ScalingPoint> sample;
  const std::vector<ScalingPoint> original = sorted(point_estimates(points));
  bool varied = false;
  for (int r = 0; r < resamples; ++r) {
    sample.clear();
    for (std::size_t i = 0; i < points.size(); ++i) {
      const MeasuredPoint& p = points[sources.batch_sizes ? pick(rng) : i];
      // A batch size whose resampled seeds leave its median censored is left out of this fit.
      if (const double steps = resampled_steps(p, sources, rng); !std::isnan(steps))
        sample.push_back({p.batch_size, steps});
    }
    if (distinct_batch_sizes(sample) < 3)
      continue;  // too few distinct batch sizes to fit two parameters
    varied = varied || !same_points(sorted(sample), original);
    fits.push_back(fit_critical_batch(sample));
  }
  // Every kept resample the sweep itself (3 batch sizes, one seed each, steps known to one step:
  // only reorderings of all 3 can be fitted): the bootstrap measured no spread, and its
  // [x, x] claimed a certainty no measurement gave (S_min = 1.93 [1.93, 1.93], 2026-11-28).
  if (!varied) fits.clear();
  return fits;
}

BootstrapIntervals intervals_of(const std::vector<CriticalBatchFit>& fits, double level,
                                const CriticalBatchFit& point) {
  std::vector<double> s_min, b_noise, e_min, b_crit;
  for (const CriticalBatchFit& f : fits) {
    // A replicate above the sweep bounds B_crit only below, and its S_min (~1e-23) is 0 within
    // what it measured: its B_crit counts as infinite, so that past the tail's share of such
    // replicates the interval is open above rather than ending at 6e26.
    s_min.push_back(f.above_sweep ? 0.0 : f.S_min);
    b_noise.push_back(b_crit_or_infinity(f));
    e_min.push_back(f.E_min);
    b_crit.push_back(b_crit_or_infinity(f));
  }
  BootstrapIntervals out;
  out.resamples = static_cast<int>(s_min.size());  // too few: NaN ends (null in fit.json)
  // Above the sweep the fit's S_min is 0 within what it measured too: [0, hi], bounded above.
  out.S_min = percentile_interval(s_min, level, point.above_sweep ? 0.0 : point.S_min);
  out.B_noise = percentile_interval(b_noise, level, b_crit_or_infinity(point));
  out.E_min = percentile_interval(e_min, level, point.E_min);
  out.B_crit = percentile_interval(b_crit, level, b_crit_or_infinity(point));
  return out;
}

nlohmann::json censored_json(const std::vector<CensoredPoint>& censored) {
  nlohmann::json out = nlohmann::json::array();
  for (const CensoredPoint& c : censored) {
    out.push_back({{"batch_size", c.batch_size},
                   // null: most of its seeds diverged, no bound
                   {"steps_at_least", finite_or_null(c.steps_at_least)},
                   {"seeds", c.seeds},
                   {"seeds_reached", c.seeds_reached}});
  }
  return out;
}

nlohmann::json unmeasured_seeds_json(const std::vector<MeasuredPoint>& measured) {
  nlohmann::json out = nlohmann::json::array();
  for (const MeasuredPoint& p : measured)
    if (p.seeds_unmeasured > 0)
      out.push_back({{"batch_size", p.batch_size},
                     {"seeds", p.seeds.size()},
                     {"seeds_unmeasured", p.seeds_unmeasured}});
  return out;
}

}  // namespace lbt::analysis
