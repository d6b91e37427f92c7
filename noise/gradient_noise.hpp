// Gradient noise scale: the two-batch estimator of |G|^2 and tr(Sigma), smoothing, and the
// simple noise scale B_simple = tr(Sigma) / |G|^2 with a 95% interval.
// McCandlish, Kaplan, Amodei 2018, "An Empirical Model of Large-Batch Training",
// arXiv:1812.06162, eq. 2.8 (B_simple) and Appendix A.1 (unbiased two-batch estimates).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace lbt::noise {

// One step's unbiased estimates (either may be negative on a single step; only their
// smoothed ratio is meaningful).
struct NoiseEstimate {
  double G_sq = 0.0;         // |G|^2, squared norm of the true gradient
  double trace_sigma = 0.0;  // tr(Sigma), per-example gradient covariance trace
};

// Appendix A.1: since E|G_b|^2 = |G|^2 + tr(Sigma)/b for a batch of b i.i.d. examples,
//   |G|^2      = (B |G_B|^2 - b |G_b|^2) / (B - b)
//   tr(Sigma)  = (|G_b|^2 - |G_B|^2) / (1/b - 1/B)
// are unbiased for any b < B. `g_small_sq` is the mean over the small batches.
// @param b           small batch size (examples)
// @param g_small_sq  |G_b|^2, averaged over the small batches
// @param B           big batch size (examples), B > b
// @param g_big_sq    |G_B|^2
NoiseEstimate two_batch_estimate(double b, double g_small_sq, double B, double g_big_sq);

// Bias-corrected exponential moving average (Adam's m_hat): after t updates the estimate is
// sum_i w_i x_i / sum_i w_i with w_i = beta^(t - i), so early values are not pulled toward 0.
class Ema {
 public:
  explicit Ema(double beta) : beta_(beta) {}
  void add(double x);
  double value() const;                       // bias-corrected; 0 before the first add
  std::int64_t count() const { return count_; }

 private:
  double beta_, m_ = 0.0, weight_ = 0.0;  // weight_ = 1 - beta^t
  std::int64_t count_ = 0;
};

// B_simple with its interval, from the smoothed estimates.
struct NoiseScale {
  double G_sq = 0.0, trace_sigma = 0.0;  // bias-corrected EMAs
  double b_simple = 0.0;                 // trace_sigma / G_sq (NaN while G_sq <= 0)
  double ci_low = 0.0, ci_high = 0.0;    // 95% interval (NaN until 3 samples)
  double effective_samples = 0.0;        // (sum w)^2 / sum w^2 of the EMA weights
  std::int64_t samples = 0;
};

// Smooths per-step (|G|^2, tr(Sigma)) estimates and gives B_simple as the ratio of the two
// EMAs (McCandlish §A.1: "we use exponential moving averages of each before taking the ratio").
// Interval: the EMA is a weighted mean with weights w_i = beta^(t-i). The tracker keeps the
// weighted second moments, so Var(mean) = s^2 * sum w^2 / (sum w)^2 for each estimate and their
// covariance; the delta method for R = T/G gives Var(R) = (Var T - 2R Cov(T,G) + R^2 Var G)/G^2,
// and the interval is R +- t_{0.975, n_eff-1} sd(R), with n_eff = (sum w)^2 / sum w^2.
// It treats steps as independent draws around a slowly moving mean (fresh batches each step);
// it does not cover the drift of the true B_simple within the EMA window.
class NoiseScaleTracker {
 public:
  explicit NoiseScaleTracker(double beta = kDefaultBeta);
  void add(const NoiseEstimate& e);
  NoiseScale current() const;
  void reset();
  // The running sums, for checkpoints: restoring them continues the EMA exactly.
  static constexpr std::size_t kStateSize = 8;
  void save_state(std::span<double, kStateSize> out) const;
  void load_state(std::span<const double, kStateSize> in);

  // Default EMA decay: an effective window of about 2/(1-beta) - 1 = 39 estimates.
  static constexpr double kDefaultBeta = 0.95;

 private:
  double beta_;
  double sw_ = 0.0, sw2_ = 0.0;  // sum of weights, sum of squared weights (both decayed)
  double sG_ = 0.0, sT_ = 0.0, sGG_ = 0.0, sTT_ = 0.0, sGT_ = 0.0;  // weighted sums
  std::int64_t count_ = 0;
};

// Two-sided 95% Student-t quantile for `dof` degrees of freedom (dof may be fractional;
// Cornish-Fisher expansion, within 0.5% of the exact value for dof >= 2).
double t_quantile_975(double dof);

}  // namespace lbt::noise
