// The gain of an adaptive batch over every fixed batch (McCandlish et al. 2018,
// arXiv:1812.06162, App. D, eq. D.5), as derived here from the paper's per-step model (eq.
// 2.7-2.11): a step with batch B at noise scale B_noise makes the progress of
// 1 / (1 + B_noise / B) optimal steps, so with progress s counted in optimal steps
//   dS = ds (1 + B_noise / B),   dE = B dS = ds (B + B_noise),
// S_min = int ds, E_min = int B_noise ds. Minimising S + lambda E at each s gives
// B = sqrt(B_noise / lambda), and then
//   (S / S_min - 1)(E / E_min - 1) = <sqrt(B_noise)>^2 / <B_noise> =: gamma <= 1
// (averages over s), against exactly 1 for any fixed batch (eq. 2.11). We could not check the
// appendix's own text, so "eq. D.5" names this result as derived from the model above.
// B_simple stands in for B_noise where that is what was measured (equal when the Hessian is a
// multiple of the identity, §2.2).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

// One point of a training trajectory: at optimizer step `step` the noise scale was `b_noise`
// and the global batch `batch` (both in examples).
struct TrajectoryPoint {
  double step = 0.0, b_noise = 0.0, batch = 0.0;
};

// gamma = <sqrt(B_noise)>^2 / <B_noise> with the averages weighted by progress,
// ds = dS / (1 + B_noise / B): the steps from one usable point to the next carry the first's
// B_noise and B. Points with a non-finite or non-positive b_noise or batch are skipped (an
// unresolved noise scale). nullopt when fewer than two usable points span a positive interval.
std::optional<double> predicted_gamma(std::span<const TrajectoryPoint> trajectory);

// The product (S/S_min - 1)(E/E_min - 1) the per-step model predicts for the batches the
// trajectory actually used: <B_noise/B> <B> / <B_noise> (same ds weighting and skipping as
// predicted_gamma). 1 for any fixed batch and for B proportional to B_noise (the b_simple rule
// unclipped); gamma for B proportional to sqrt(B_noise), the smallest it can be.
std::optional<double> model_product(std::span<const TrajectoryPoint> trajectory);

// A measured quantity known within [lo, hi] (a resolution bracket or an interval).
struct Bracket {
  double value = 0.0, lo = 0.0, hi = 0.0;
};

// The measured product P = (S / S_min - 1)(E / E_min - 1) of an adaptive run that took S steps
// and E examples to the target, against a fixed-batch fit's S_min and E_min; P < 1 is a gain
// over every fixed batch of that fit (P = 1 on its curve).
struct MeasuredProduct {
  std::optional<double> value, lo, hi;  // nullopt: unresolved, or (lo, hi) unbounded
  std::string why;                      // why value is unresolved; empty when it is not
};

// Bounds from the brackets by monotonicity (P grows with S and E, falls with S_min and E_min);
// each factor's lower bound is clipped at 0 (a positive quantity), and the upper bound is
// unbounded (nullopt) where S_min's or E_min's lower end is not > 0. value is nullopt, with
// why, when S <= S_min or E <= E_min (the run beat the fit: the model does not apply) or when a
// fit value is not finite and positive.
MeasuredProduct measured_product(Bracket steps, Bracket examples, Bracket S_min, Bracket E_min);

// One seed's adaptive run as a sweep measured it: steps and examples to the target within the
// evaluation grid's bracket (steps_lo, steps], and the gamma its trajectory predicts.
struct AdaptiveSeed {
  std::string name, status;
  bool reached = false;
  Bracket steps, examples;      // value = hi: the first evaluation meeting the target
  std::optional<double> gamma;  // predicted_gamma of its trajectory up to the target
  std::optional<double> model;  // model_product of the same trajectory
};

// adaptive.json's content: per seed, and over the seeds that reached the target the median
// [min, max] of steps, examples and predicted gamma; the measured product against `fit`
// (fit.json; null: no fit) at the median steps and examples, its bounds from the seeds' lowest
// lower ends and highest upper ends and the fit's S_min and E_min intervals. JSON null where
// unresolved (no seed reached the target, no fit), with a "why".
nlohmann::json adaptive_summary(const std::vector<AdaptiveSeed>& seeds, const nlohmann::json& fit);

}  // namespace lbt::analysis
