// Critical-batch fit; see critical_batch.hpp.
#include "analysis/critical_batch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>

#include "analysis/measured_fit.hpp"
#include "core/error.hpp"

namespace lbt::analysis {
namespace {

struct Line {
  double a = 0.0, b = 0.0;  // S = a + b / B
};

double log_loss(const std::vector<ScalingPoint>& p, Line l) {
  double sum = 0.0;
  for (const auto& q : p) {
    const double r = std::log(q.steps) - std::log(l.a + l.b / q.batch_size);
    sum += r * r;
  }
  return sum;
}

// Weighted least squares of S on x = 1/B with weights 1/S^2 (relative errors), closed form.
Line relative_weight_line(const std::vector<ScalingPoint>& p) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& q : p) {
    const double w = 1.0 / (q.steps * q.steps), x = 1.0 / q.batch_size, y = q.steps;
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
  }
  const double det = sw * sxx - sx * sx;
  Line l;
  if (det > 0) {
    l.b = (sw * sxy - sx * sy) / det;
    l.a = (sy - l.b * sx) / sw;
  }
  // Keep the start inside the model's domain (S_min > 0, B_noise >= 0).
  double min_s = p.front().steps;
  for (const auto& q : p) min_s = std::min(min_s, q.steps);
  if (!(l.b >= 0)) l.b = 0;
  if (!(l.a > 0)) l.a = 0.5 * min_s;
  return l;
}

Line gauss_newton_log(const std::vector<ScalingPoint>& p, Line l) {
  double loss = log_loss(p, l);
  for (int iter = 0; iter < 100; ++iter) {
    // Residual r_i = log S_i - log f_i, f_i = a + b x_i; d log f / da = 1/f, d/db = x/f.
    double jtj00 = 0, jtj01 = 0, jtj11 = 0, jtr0 = 0, jtr1 = 0;
    for (const auto& q : p) {
      const double x = 1.0 / q.batch_size, f = l.a + l.b * x;
      const double r = std::log(q.steps) - std::log(f), j0 = 1.0 / f, j1 = x / f;
      jtj00 += j0 * j0;
      jtj01 += j0 * j1;
      jtj11 += j1 * j1;
      jtr0 += j0 * r;
      jtr1 += j1 * r;
    }
    // Levenberg-damped normal equations, solved in closed form (2x2).
    const double damp = 1e-12 * (jtj00 + jtj11);
    const double a00 = jtj00 + damp, a11 = jtj11 + damp, det = a00 * a11 - jtj01 * jtj01;
    if (!(det > 0)) break;
    const double da = (a11 * jtr0 - jtj01 * jtr1) / det, db = (a00 * jtr1 - jtj01 * jtr0) / det;
    // Step halving with projection onto a > 0, b >= 0.
    double t = 1.0;
    bool improved = false;
    for (int h = 0; h < 40; ++h, t *= 0.5) {
      Line next{std::max(l.a + t * da, 1e-12 * l.a), std::max(l.b + t * db, 0.0)};
      const double next_loss = log_loss(p, next);
      if (next_loss < loss) {
        const double change = loss - next_loss;
        l = next;
        loss = next_loss;
        improved = change > 1e-15 * (1.0 + loss);
        break;
      }
    }
    if (!improved) break;
  }
  return l;
}

// The least-squares fit over the model's whole domain (a > 0, b >= 0). Projected Gauss-Newton
// stops on an edge without minimising along it: once a step is clipped at b = 0 (or a at its
// floor), the other parameter is not solved again, and it ended up to 10% off the optimum on
// flat or steeper-than-1/B sweeps (an audit's independent fit, 2026-11-29). So it also starts
// from each edge's own optimum, in closed form for a log-residual loss: on b = 0 (S flat) a is
// the geometric mean of the steps; as a -> 0 (S = b / B) b is the geometric mean of the
// examples (a kept a negligible 1e-12 of the smallest step, so B_crit stays finite); the
// lowest loss of the three wins.
Line least_squares_line(const std::vector<ScalingPoint>& p) {
  double log_steps = 0.0, log_examples = 0.0, x_max = 0.0;
  for (const auto& q : p) {
    log_steps += std::log(q.steps);
    log_examples += std::log(q.steps * q.batch_size);
    x_max = std::max(x_max, 1.0 / q.batch_size);
  }
  const auto n = static_cast<double>(p.size());
  const double b_edge = std::exp(log_examples / n);
  Line best = gauss_newton_log(p, relative_weight_line(p));
  for (const Line start :
       {Line{std::exp(log_steps / n), 0.0}, Line{1e-12 * b_edge * x_max, b_edge}}) {
    const Line l = gauss_newton_log(p, start);
    if (log_loss(p, l) < log_loss(p, best)) best = l;
  }
  return best;
}

CriticalBatchFit fit_unchecked(const std::vector<ScalingPoint>& points) {
  Line l = least_squares_line(points);
  CriticalBatchFit fit;
  fit.S_min = l.a;
  fit.B_noise = l.b / l.a;
  fit.E_min = l.b;  // S_min * B_noise
  fit.B_crit = fit.E_min / fit.S_min;
  fit.rms_log_residual = std::sqrt(log_loss(points, l) / static_cast<double>(points.size()));
  double largest = 0.0, smallest = HUGE_VAL;
  for (const auto& q : points)
    largest = std::max(largest, q.batch_size), smallest = std::min(smallest, q.batch_size);
  // Projected onto b = 0 (S(B) flat), or B_crit below 1/kSweepReach of the smallest batch size,
  // where S(B_min) lies within 1% of S_min and no sweep's noise tells it from flat: no critical
  // batch (the mirror of above_sweep), and B_crit and E_min are 0 as the model's boundary, so a
  // bootstrap's lower ends read 0, not 2e-14.
  fit.resolved = l.b > 0.0 && fit.B_crit * kSweepReach >= smallest;
  if (!fit.resolved) fit.B_noise = fit.E_min = fit.B_crit = 0.0;
  // Also where a, pushed towards its floor, leaves B_crit infinite or NaN.
  fit.above_sweep = fit.resolved && !(fit.B_crit <= kSweepReach * largest);
  return fit;
}

// A reading as a person writes it: 16, 0, 1e+15 (std::to_string gives 16.000000).
std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

}  // namespace

CriticalBatchFit fit_critical_batch(const std::vector<ScalingPoint>& points) {
  for (const auto& q : points) {
    if (!(q.batch_size > 0) || !(q.steps > 0) || !std::isfinite(q.steps)) {
      throw Error("critical-batch fit: batch size " + number(q.batch_size) + " has steps " +
                      number(q.steps) + "; both must be positive and finite",
                  "pass only batch sizes whose best trial reached the target");
    }
  }
  const std::size_t n = distinct_batch_sizes(points);
  if (n < 3) {
    throw Error("critical-batch fit needs at least 3 batch sizes that reached the target, got " +
                    std::to_string(n),
                "sweep more batch sizes (e.g. --batch-sizes 16,64,256,1024,4096), raise the step "
                "budget (sweep.max_examples / sweep.max_steps), or loosen --target");
  }
  return fit_unchecked(points);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(i);
  if (frac == 0.0 || i + 1 == v.size()) return v[i];  // not 0 * inf (NaN) beside an open end
  return v[i] * (1 - frac) + v[i + 1] * frac;
}

const char* b_crit_extrapolated(const std::vector<ScalingPoint>& points,
                                const CriticalBatchFit& fit) {
  if (!fit.b_crit_measured() || points.empty()) return nullptr;
  const auto [lo, hi] = std::minmax_element(
      points.begin(), points.end(),
      [](const ScalingPoint& a, const ScalingPoint& b) { return a.batch_size < b.batch_size; });
  if (fit.B_crit < lo->batch_size) return "below";
  if (fit.B_crit > hi->batch_size) return "above";
  return nullptr;
}

std::size_t min_resamples(double level) {
  return static_cast<std::size_t>(std::ceil(2.0 / (1.0 - level) - 1e-9));
}

Interval percentile_interval(const std::vector<double>& values, double level, double estimate) {
  if (values.size() < min_resamples(level)) {
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    return {kNone, kNone};
  }
  const Interval q{quantile(values, (1 - level) / 2), quantile(values, (1 + level) / 2)};
  return {std::min(q.lo, estimate), std::max(q.hi, estimate)};
}

BootstrapIntervals bootstrap_critical_batch(const std::vector<ScalingPoint>& points, int resamples,
                                            double level, std::uint64_t seed) {
  std::vector<MeasuredPoint> exact;
  for (const ScalingPoint& p : points) exact.push_back({p.batch_size, {{p.steps, p.steps}}});
  return intervals_of(measurement_bootstrap_fits(exact, {true, false, false}, resamples, seed),
                      level, fit_critical_batch(points));
}

}  // namespace lbt::analysis
