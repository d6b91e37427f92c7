// The LR-vs-batch law; see lr_law.hpp.
#include "analysis/lr_law.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace lbt::analysis {
namespace {

// The B_noise search range, in multiples of the batch sizes swept: beyond it the data cannot
// tell eps_max / (1 + B_noise / B) from a straight line (or a constant).
constexpr double kRangeFactor = 100.0;

// Sum of squared log residuals at B_noise = bn, with eps_max at its closed-form optimum.
double noise_law_loss(const std::vector<LrPoint>& p, double bn, double* log_eps_max) {
  double mean = 0.0;
  for (const auto& q : p) mean += std::log(q.lr) + std::log1p(bn / q.batch_size);
  mean /= static_cast<double>(p.size());
  double sse = 0.0;
  for (const auto& q : p) {
    const double r = std::log(q.lr) - (mean - std::log1p(bn / q.batch_size));
    sse += r * r;
  }
  if (log_eps_max) *log_eps_max = mean;
  return sse;
}

// One bootstrap replicate into `sample` (sized as `points`): batch sizes drawn with
// replacement, each best LR drawn log-uniformly within its bracket (the search knows the
// optimum only between the best's neighbours).
template <class Rng>
void draw_replicate(const std::vector<LrPoint>& points, Rng& rng, std::vector<LrPoint>& sample) {
  std::uniform_int_distribution<std::size_t> pick(0, points.size() - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (auto& q : sample) {
    q = points[pick(rng)];
    q.lr = std::exp(std::log(q.lr_lo) + unit(rng) * std::log(q.lr_hi / q.lr_lo));
  }
}

}  // namespace

std::vector<LrPoint> searched_lr_points(const std::vector<LrPoint>& points) {
  std::vector<LrPoint> searched;
  for (const LrPoint& p : points)
    if (p.lr_lo < p.lr_hi) searched.push_back(p);
  return searched;
}

PowerLaw fit_power_law(const std::vector<LrPoint>& p) {
  if (distinct_batch_sizes(p) < 2)
    throw Error("the LR law needs best LRs at >= 2 batch sizes", "sweep more batch sizes");
  double mx = 0, my = 0;
  for (const auto& q : p) mx += std::log(q.batch_size), my += std::log(q.lr);
  mx /= static_cast<double>(p.size());
  my /= static_cast<double>(p.size());
  double sxy = 0, sxx = 0;
  for (const auto& q : p) {
    const double dx = std::log(q.batch_size) - mx;
    sxy += dx * (std::log(q.lr) - my);
    sxx += dx * dx;
  }
  const double alpha = sxy / sxx;
  return {alpha, std::exp(my - alpha * mx)};
}

NoiseLaw fit_noise_law(const std::vector<LrPoint>& p) {
  double b_min = INFINITY, b_max = 0;
  for (const auto& q : p)
    b_min = std::min(b_min, q.batch_size), b_max = std::max(b_max, q.batch_size);
  const double lo = std::log(b_min / kRangeFactor), hi = std::log(b_max * kRangeFactor);
  constexpr int kGrid = 200;
  int best = 0;
  double best_loss = INFINITY;
  for (int i = 0; i <= kGrid; ++i) {
    const double loss = noise_law_loss(p, std::exp(lo + (hi - lo) * i / kGrid), nullptr);
    if (loss < best_loss) best_loss = loss, best = i;
  }
  // Golden section on the grid cell pair around the best point.
  double a = lo + (hi - lo) * std::max(0, best - 1) / kGrid;
  double b = lo + (hi - lo) * std::min(kGrid, best + 1) / kGrid;
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  for (int it = 0; it < 60; ++it) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    if (noise_law_loss(p, std::exp(c), nullptr) < noise_law_loss(p, std::exp(d), nullptr))
      b = d;
    else
      a = c;
  }
  NoiseLaw law;
  law.B_noise = std::exp(0.5 * (a + b));
  double log_eps_max = 0.0;
  noise_law_loss(p, law.B_noise, &log_eps_max);
  law.eps_max = std::exp(log_eps_max);
  law.resolved = best > 0 && best < kGrid;
  law.unbounded = best == kGrid;
  return law;
}

LrLawFit fit_lr_law(const std::vector<LrPoint>& points, int resamples, double level,
                    std::uint64_t seed) {
  LrLawFit fit;
  fit.power = fit_power_law(points);
  fit.noise = fit_noise_law(points);
  auto rng = make_rng(seed, RngStream::kSweep, 0x1A7);
  std::vector<double> alpha, eps_max, b_noise;
  int open = 0;
  std::vector<LrPoint> sample(points.size());
  for (int r = 0; r < resamples; ++r) {
    draw_replicate(points, rng, sample);
    if (distinct_batch_sizes(sample) < 3) continue;
    alpha.push_back(fit_power_law(sample).alpha);
    const NoiseLaw n = fit_noise_law(sample);
    // No flattening within the range: eps_max grows with the range's edge (eps_opt ~ eps_max B /
    // B_noise there), so it is bounded only below, as B_noise is.
    eps_max.push_back(n.unbounded ? HUGE_VAL : n.eps_max);
    b_noise.push_back(n.B_noise);
    open += n.unbounded;
  }
  fit.resamples = static_cast<int>(alpha.size());
  if (alpha.size() < min_resamples(level)) return fit;  // no intervals: B_noise stays empty
  const double lo = (1 - level) / 2, hi = (1 + level) / 2;
  // Each interval holds its estimate: a best LR at the edge of the search has a one-sided
  // bracket, so its draws all lie on one side of it, and with 3 batch sizes (resamples that only
  // reorder them) the replicates did too: best lr ~ B^0.75 [0.528, 0.724] (2026-11-28).
  fit.alpha = percentile_interval(alpha, level, fit.power.alpha);
  fit.eps_max =
      percentile_interval(eps_max, level, fit.noise.unbounded ? HUGE_VAL : fit.noise.eps_max);
  // B_noise at the search's edge is no estimate (null in fit.json): nothing to hold. At the lower
  // edge (best LRs flat in B) it is bounded only above: the range's floor, B_min / 100, is no
  // lower end the data gave, so the interval starts at 0.
  fit.B_noise = fit.noise.resolved ? percentile_interval(b_noise, level, fit.noise.B_noise)
                                   : Interval{quantile(b_noise, lo), quantile(b_noise, hi)};
  if (!fit.noise.resolved && !fit.noise.unbounded) fit.B_noise->lo = 0.0;
  // At the upper edge, or where more than the tail's share of resamples ran off it: no finite
  // upper end.
  fit.B_noise_upper_open =
      fit.noise.unbounded || open > (1 - hi) * static_cast<double>(fit.resamples);
  return fit;
}

Interval power_law_lr_interval(const std::vector<LrPoint>& points, double batch, int resamples,
                               double level, std::uint64_t seed) {
  const PowerLaw law = fit_power_law(points);
  auto rng = make_rng(seed, RngStream::kSweep, 0x1A8);
  std::vector<double> lr;
  std::vector<LrPoint> sample(points.size());
  for (int r = 0; r < resamples; ++r) {
    draw_replicate(points, rng, sample);
    if (distinct_batch_sizes(sample) < 3) continue;
    const PowerLaw l = fit_power_law(sample);
    lr.push_back(l.c * std::pow(batch, l.alpha));
  }
  if (lr.size() < min_resamples(level)) return {NAN, NAN};
  return percentile_interval(lr, level, law.c * std::pow(batch, law.alpha));
}

}  // namespace lbt::analysis
