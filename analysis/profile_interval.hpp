// Profile-likelihood intervals for the critical-batch fit (critical_batch.hpp) of (B, S) points:
// for each of S_min, E_min and B_crit, the values at which the model, refitted with that one
// fixed, stays within an F test of the best fit (Bates & Watts 1988, "Nonlinear Regression
// Analysis", sec. 6.1; what R's confint does for nls):
//   { theta : SSR_theta <= SSR_min (1 + F(1, n - 2; level) / (n - 2)) },
// SSR the sum of squared log residuals (the fit's own loss), SSR_theta its least value with
// theta fixed, n the points. Exact for a model linear in its parameters with normal errors in
// log S; here the model S = S_min + E_min / B is close to linear over a sweep. The percentile
// bootstrap over batch sizes undercovers with few points (85-92% for a nominal 95% over 5 to 9
// batch sizes: resampling 9 points understates their spread, and a resample repeats some);
// this interval uses the residuals' spread with its n - 2 degrees of freedom.
#pragma once
#include <vector>

#include "analysis/critical_batch.hpp"

namespace lbt::analysis {

// Each quantity's interval, never below 0 (0 where the data allow the model's edge: S_min -> 0
// is perfect scaling, B_crit -> 0 flat steps) and +infinity above where they allow B_crit -> oo.
// B_noise's is B_crit's. Needs n >= 3 points at >= 3 distinct batch sizes (fit_critical_batch's
// rule); `fit` is fit_critical_batch(points).
BootstrapIntervals profile_critical_batch(const std::vector<ScalingPoint>& points,
                                          const CriticalBatchFit& fit, double level = 0.95);

}  // namespace lbt::analysis
