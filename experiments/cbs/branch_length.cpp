// measured_branch_length; see branch_length.hpp.
#include "experiments/cbs/branch_length.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lbt::experiments {
namespace {

struct BranchLine {
  double slope = 0.0, noise = 0.0;
};

// Least squares val_loss = a + slope x examples; noise = sqrt(sum r^2 / (n - 2)).
BranchLine fit_branch_line(const std::vector<EvalPoint>& points) {
  const auto n = static_cast<double>(points.size());
  double mean_x = 0.0, mean_y = 0.0;
  for (const EvalPoint& p : points) {
    mean_x += static_cast<double>(p.examples) / n;
    mean_y += p.val_loss / n;
  }
  double sxx = 0.0, sxy = 0.0;
  for (const EvalPoint& p : points) {
    const double dx = static_cast<double>(p.examples) - mean_x;
    sxx += dx * dx;
    sxy += dx * (p.val_loss - mean_y);
  }
  BranchLine line;
  line.slope = sxx > 0.0 ? sxy / sxx : 0.0;
  double ss = 0.0;
  for (const EvalPoint& p : points) {
    const double r = p.val_loss - mean_y - line.slope * (static_cast<double>(p.examples) - mean_x);
    ss += r * r;
  }
  line.noise = std::sqrt(ss / (n - 2.0));
  return line;
}

// The evaluations within `window` examples after `from` (and before it, where too few lie after).
std::vector<EvalPoint> points_near_checkpoint(const std::vector<EvalPoint>& curve,
                                              std::int64_t from, std::int64_t window,
                                              bool both_sides) {
  std::vector<EvalPoint> points;
  for (const EvalPoint& p : curve) {
    const bool after = p.examples >= from && p.examples <= from + window;
    const bool before = p.examples >= from - window && p.examples < from;
    if (std::isfinite(p.val_loss) && (after || (both_sides && before))) points.push_back(p);
  }
  return points;
}

}  // namespace

BranchLength measured_branch_length(const std::vector<EvalPoint>& curve, std::int64_t from,
                                    std::int64_t largest_batch) {
  const std::int64_t floor = kMinSteps * largest_batch, cap = kMaxSteps * largest_batch;
  BranchLength b;
  b.examples = floor;
  std::vector<EvalPoint> points = points_near_checkpoint(curve, from, cap, false);
  if (static_cast<int>(points.size()) < kMinEvaluations)
    points = points_near_checkpoint(curve, from, cap, true);
  b.evaluations = static_cast<int>(points.size());
  char text[200];
  if (b.evaluations < kMinEvaluations) {
    std::snprintf(text, sizeof text,
                  "the floor (%lld steps at the largest batch): %d evaluation(s) within %lld "
                  "examples of the checkpoint, fewer than %d to measure the loss's fall and noise",
                  static_cast<long long>(kMinSteps), b.evaluations, static_cast<long long>(cap),
                  kMinEvaluations);
    b.rule = text;
    return b;
  }
  const BranchLine line = fit_branch_line(points);
  b.fall_per_example = -line.slope;
  b.noise = line.noise;
  if (!(line.slope < 0.0)) {
    std::snprintf(text, sizeof text,
                  "the floor (%lld steps at the largest batch): the reference's val_loss does not "
                  "fall over %d evaluations near the checkpoint",
                  static_cast<long long>(kMinSteps), b.evaluations);
    b.rule = text;
    return b;
  }
  const double needed = kFallInNoise * line.noise / -line.slope;
  const double steps = std::ceil(needed / static_cast<double>(largest_batch));
  const std::int64_t whole =
      static_cast<std::int64_t>(std::min<double>(steps, kMaxSteps)) * largest_batch;
  b.examples = std::clamp(whole, floor, cap);
  std::snprintf(text, sizeof text,
                "val_loss falls %.3g per example with noise %.3g over %d evaluations: %.0f "
                "examples fall %.0f x the noise%s",
                -line.slope, line.noise, b.evaluations, needed, kFallInNoise,
                b.examples == floor && whole < floor                     ? " (the floor is longer)"
                : b.examples == cap && needed > static_cast<double>(cap) ? " (capped)"
                                                                         : "");
  b.rule = text;
  return b;
}

}  // namespace lbt::experiments
