// Profile-likelihood intervals of the critical-batch fit; see profile_interval.hpp.
#include "analysis/profile_interval.hpp"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>

namespace lbt::analysis {
namespace {

// The points as the fit's loss reads them: y = log S, x = 1 / B.
struct LogPoints {
  std::vector<double> y, x;
};

using Ssr = std::function<double(double)>;

// The sum of squares of `r` about its mean: the least SSR over a free additive constant.
double centred_squares(const std::vector<double>& r) {
  double mean = 0.0, sum = 0.0;
  for (double v : r) mean += v / static_cast<double>(r.size());
  for (double v : r) sum += (v - mean) * (v - mean);
  return sum;
}

// SSR of S = a + e x in log space.
double ssr(const LogPoints& d, double a, double e) {
  double sum = 0.0;
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    const double r = d.y[i] - std::log(a + e * d.x[i]);
    sum += r * r;
  }
  return sum;
}

// B_crit = c fixed: S = S_min (1 + c x), log S_min profiled out in closed form (the mean
// residual). c = +infinity is perfect scaling, S = E_min x.
double ssr_at_b_crit(const LogPoints& d, double c) {
  std::vector<double> r(d.y.size());
  for (std::size_t i = 0; i < r.size(); ++i)
    r[i] = d.y[i] - (std::isinf(c) ? std::log(d.x[i]) : std::log1p(c * d.x[i]));
  return centred_squares(r);
}

// The least of f(u) over u >= 0: f(0), or the best of a grid over log u (scale e^-30 to e^30,
// steps of 1/2) refined by golden section between the grid's neighbours of its best point.
double least_over(const Ssr& f, double scale) {
  const double step = 0.5, lo_s = std::log(scale) - 30.0;
  double best = f(0.0), best_s = NAN;
  for (int i = 0; i <= 120; ++i) {
    const double s = lo_s + step * i, v = f(std::exp(s));
    if (v < best) best = v, best_s = s;
  }
  if (std::isnan(best_s)) return best;
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = best_s - step, b = best_s + step;
  double c = b - g * (b - a), e = a + g * (b - a), fc = f(std::exp(c)), fe = f(std::exp(e));
  for (int it = 0; it < 60; ++it) {
    if (fc < fe) {
      b = e, e = c, fe = fc, c = b - g * (b - a), fc = f(std::exp(c));
    } else {
      a = c, c = e, fc = fe, e = a + g * (b - a), fe = f(std::exp(e));
    }
  }
  return std::min({best, fc, fe});
}

// {theta >= 0 : ssr(theta) <= limit} around `estimate`, the best fit: each edge found by
// walking out from a point inside by factors of 2 and bisecting log theta. ssr_low and
// ssr_high are the model's edges theta = 0 and +infinity (ssr_high +infinity where theta cannot
// grow without bound and still fit). An estimate of 0 (the model's edge) starts at `scale`.
Interval profile_set(const Ssr& f, double estimate, double scale, double limit, double ssr_low,
                     double ssr_high) {
  const auto inside = [&](double theta) { return f(theta) <= limit; };
  const auto edge = [&](double in, double out) {  // bisect log theta
    for (int it = 0; it < 50; ++it) {
      const double mid = std::sqrt(in * out);
      (inside(mid) ? in : out) = mid;
    }
    return in;
  };
  // From `from` (inside) by factors of `by` to the first point outside; +infinity or 0 where
  // 200 steps find none.
  const auto walk = [&](double from, double by) {
    double t = from;
    for (int k = 0; k < 200 && inside(t); ++k) t *= by;
    return inside(t) ? (by > 1.0 ? HUGE_VAL : 0.0) : edge(t / by, t);
  };
  const double start = estimate > 0.0 && std::isfinite(estimate) ? estimate : scale;
  Interval set{0.0, HUGE_VAL};
  if (!inside(start)) {  // estimate 0: the set is [0, hi] with hi below `scale`
    double t = start;
    for (int k = 0; k < 200 && !inside(t); ++k) t /= 2.0;
    return {0.0, inside(t) ? edge(t, 2.0 * t) : 0.0};
  }
  if (!(ssr_low <= limit)) set.lo = walk(start, 0.5);
  if (!(ssr_high <= limit)) set.hi = walk(start, 2.0);
  // The best fit lies inside whatever the walks' rounding says.
  if (std::isfinite(estimate))
    set.lo = std::min(set.lo, estimate), set.hi = std::max(set.hi, estimate);
  return set;
}

}  // namespace

BootstrapIntervals profile_critical_batch(const std::vector<ScalingPoint>& points,
                                          const CriticalBatchFit& fit, double level) {
  LogPoints d;
  std::vector<double> perfect;  // log S - log x: perfect scaling's residuals
  for (const auto& p : points) {
    d.y.push_back(std::log(p.steps));
    d.x.push_back(1.0 / p.batch_size);
    perfect.push_back(d.y.back() - std::log(d.x.back()));
  }
  const double n = static_cast<double>(points.size()), dof = n - 2.0;
  const double t = boost::math::quantile(boost::math::students_t(dof), (1.0 + level) / 2.0);
  const double least = std::min(ssr(d, fit.S_min, fit.E_min), ssr_at_b_crit(d, fit.B_crit));
  // Plus the resolution of the fit's own arithmetic (log residuals of 1e-7 each): steps that
  // lie exactly on the curve (least ~ 1e-30) leave intervals the width of that resolution.
  const double limit = least * (1.0 + t * t / dof) + n * 1e-14;
  double mean_y = 0.0, mean_perfect = 0.0;
  for (std::size_t i = 0; i < d.y.size(); ++i) mean_y += d.y[i] / n, mean_perfect += perfect[i] / n;
  const double flat_s = std::exp(mean_y), perfect_e = std::exp(mean_perfect);

  const Ssr at_s_min = [&](double a) {
    if (a == 0.0) return centred_squares(perfect);  // S = E x: log E the mean
    return least_over([&](double e) { return ssr(d, a, e); }, perfect_e);
  };
  const Ssr at_e_min = [&](double e) {
    if (e == 0.0) return centred_squares(d.y);  // S flat: log S_min the mean
    return least_over([&](double a) { return ssr(d, a, e); }, flat_s);
  };
  const Ssr at_b_crit = [&](double c) { return ssr_at_b_crit(d, c); };

  BootstrapIntervals out;
  out.S_min = profile_set(at_s_min, fit.S_min, flat_s, limit, at_s_min(0.0), HUGE_VAL);
  out.E_min = profile_set(at_e_min, fit.E_min, perfect_e, limit, at_e_min(0.0), HUGE_VAL);
  out.B_crit = profile_set(at_b_crit, fit.B_crit, perfect_e / flat_s, limit, at_b_crit(0.0),
                           at_b_crit(HUGE_VAL));
  out.B_noise = out.B_crit;
  return out;
}

}  // namespace lbt::analysis
