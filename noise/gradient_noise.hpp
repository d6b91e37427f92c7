// Gradient noise scale: the two-batch estimator of |G|^2 and tr(Sigma), smoothing, and the
// simple noise scale B_simple = tr(Sigma) / |G|^2 with a 95% interval.
// McCandlish, Kaplan, Amodei 2018, "An Empirical Model of Large-Batch Training",
// arXiv:1812.06162, eq. 2.9 (B_simple; eq. 2.8 is B_noise) and Appendix A.1 (unbiased two-batch
// estimates).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

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

// A 95% interval for a ratio of means R = T / G (Fieller 1954): the set of R for which
// T - R G is within t_{0.975, dof} standard errors of 0. It respects what a ratio of two noisy
// means can say: when G is not resolved from 0 (G^2 / Var G < t^2) the set is unbounded above
// (hi = +inf: "not resolved"), and, since B_simple >= 0, lo is clamped at 0. Unlike the delta
// method it never gives a negative lower end for a positive quantity.
// @param T, G         the two means (tr(Sigma) and |G|^2)
// @param var_T, var_G variances of the means; cov their covariance
// @param dof          degrees of freedom of those variances (NaN interval when <= 0)
struct RatioInterval {
  double lo = 0.0, hi = 0.0;  // hi = +inf when G is not resolved from 0
  bool resolved = false;      // G resolved from 0 at 95%
};
RatioInterval fieller_interval(double T, double G, double var_T, double var_G, double cov,
                               double dof);

// A noise scale T / G (B_simple, B_noise) and its interval as lbt reports them. A noise scale is
// >= 0: a ratio over a G within noise of 0 is no estimate, nor is a negative T (small batches
// whose gradients are longer than the big batch's were not drawn from one distribution), and an
// interval wholly below 0 holds no admissible value: each is not resolved (NaN value), never a
// negative value or bound. Not resolved, the interval is never bounded above: [lo, +inf), lo
// Fieller's conservative lower end where G is within noise of 0, else 0 (G or T significantly
// below 0: the estimator's premises fail, and a finite upper end read from them would be a
// claim); NaN ends where it lies wholly below 0.
struct ReportedRatio {
  double value = 0.0, lo = 0.0, hi = 0.0;
  bool resolved = false;
};
ReportedRatio reported_ratio(double T, double G, const RatioInterval& ci);

// B_simple with its interval, from several steps' estimates (an EMA or a window of them).
struct NoiseScale {
  static constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();
  // Means (bias-corrected EMAs, or the window's lines at its newest point); NaN: none yet.
  double G_sq = kUnmeasured, trace_sigma = kUnmeasured;
  double b_simple = 0.0;               // trace_sigma / G_sq (NaN while not resolved)
  double ci_low = 0.0, ci_high = 0.0;  // 95% interval (NaN until 2 samples; high +inf
                                       // while not resolved)
  bool resolved = false;               // |G|^2 resolved above 0: a bounded interval
  // 95% intervals of the two means (t over B_simple's degrees of freedom), the lower end clamped
  // at 0 (both are >= 0); NaN until they have a variance, or where one lies wholly below 0.
  double G_sq_low = kUnmeasured, G_sq_high = kUnmeasured;
  double trace_sigma_low = kUnmeasured, trace_sigma_high = kUnmeasured;
  double effective_samples = 0.0;  // (sum w)^2 / sum w^2 of the weights
  std::int64_t samples = 0;
};

// Smooths per-step (|G|^2, tr(Sigma)) estimates two ways and gives B_simple as a ratio of
// means (McCandlish §A.1: average each before taking the ratio):
//   averaged(): bias-corrected EMAs, weights w_i = beta^(t-i): smooth, but it lags a B_simple
//               that grows during training (an effective window of (1+beta)/(1-beta) steps);
//   now():      least-squares lines of |G|^2 and tr(Sigma) over the last `window` estimates,
//               evaluated at the newest: B_simple at the current parameters (a plain window
//               mean would sit at the window's centre; while training shrinks |G|^2
//               exponentially that lag is first order). Its variance is about 4x a mean's.
// Intervals: averaged(): Var(mean) = s^2 * sum w^2 / (sum w)^2 for each estimate and their
// covariance, n_eff - 1 degrees of freedom, n_eff = (sum w)^2 / sum w^2; now(): the lines'
// prediction variances at the newest point, n - 2 degrees of freedom. Then Fieller's interval
// for the ratio (fieller_interval). Steps are treated as independent draws (fresh batches each
// step); averaged() does not cover the drift of B_simple within the EMA's window, now() only
// its curvature within its own.
class NoiseScaleTracker {
 public:
  explicit NoiseScaleTracker(double beta = kDefaultBeta, std::size_t window = kDefaultWindow);
  void add(const NoiseEstimate& e);
  NoiseScale averaged() const;
  NoiseScale now() const;
  void reset();
  // The running sums and the window, for checkpoints: restoring them continues exactly.
  std::size_t state_size() const { return 8 + 1 + 2 * window_.size(); }
  double beta() const { return beta_; }
  std::size_t window() const { return window_.size(); }
  void save_state(std::span<double> out) const;
  void load_state(std::span<const double> in);

  // Default EMA decay: an effective window of about 2/(1-beta) - 1 = 39 estimates.
  static constexpr double kDefaultBeta = 0.95;
  static constexpr std::size_t kDefaultWindow = 10;
  // "now" is a least-squares line through the window: three measurements leave it a residual.
  static constexpr std::int64_t kLineSamples = 3;

 private:
  double beta_;
  double sw_ = 0.0, sw2_ = 0.0;  // sum of weights, sum of squared weights (both decayed)
  double sG_ = 0.0, sT_ = 0.0, sGG_ = 0.0, sTT_ = 0.0, sGT_ = 0.0;  // weighted sums
  std::int64_t count_ = 0;
  std::vector<NoiseEstimate> window_;  // ring of the last window_.size() estimates
};

// Two-sided 95% Student-t quantile for `dof` degrees of freedom (dof may be fractional), from
// the regularized incomplete beta function: exact to double round-off (NaN for dof <= 0).
double t_quantile_975(double dof);

}  // namespace lbt::noise
