// Two-batch estimator, EMA and the B_simple interval; see gradient_noise.hpp.
#include "noise/gradient_noise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lbt::noise {

NoiseEstimate two_batch_estimate(double b, double g_small_sq, double B, double g_big_sq) {
  NoiseEstimate e;
  // |G|^2 = (B|G_B|^2 - b|G_b|^2) / (B - b): the combination whose tr(Sigma) terms cancel
  e.G_sq = (B * g_big_sq - b * g_small_sq) / (B - b);
  // tr(Sigma) = (|G_b|^2 - |G_B|^2) / (1/b - 1/B): the combination whose |G|^2 terms cancel
  e.trace_sigma = (g_small_sq - g_big_sq) / (1.0 / b - 1.0 / B);
  return e;
}

ReportedRatio reported_ratio(double T, double G, const RatioInterval& ci) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  ReportedRatio r{kNaN, kNaN, kNaN, ci.resolved && G > 0.0 && T >= 0.0 && ci.hi >= 0.0};
  if (r.resolved) {
    r.value = T / G, r.lo = ci.lo, r.hi = ci.hi;
  } else if (ci.hi >= 0.0) {
    r.lo = ci.resolved ? 0.0 : ci.lo, r.hi = HUGE_VAL;
  }
  return r;
}

RatioInterval fieller_interval(double T, double G, double var_T, double var_G, double cov,
                               double dof) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!(dof > 0.0)) return {kNaN, kNaN, false};
  const double q2 = std::pow(t_quantile_975(dof), 2);
  // (T - R G)^2 <= q^2 (var_T - 2 R cov + R^2 var_G), i.e. a R^2 - 2 b R + c <= 0 with
  const double a = G * G - q2 * var_G;
  const double b = T * G - q2 * cov;
  const double c = T * T - q2 * var_T;
  if (!(a > 0.0)) {
    // G not resolved from 0: the set is unbounded. Below, a conservative bound from the two
    // means' own intervals: T no smaller than its lower end, G no larger than its upper end.
    const double T_lo = T - std::sqrt(q2 * std::max(0.0, var_T));
    const double G_hi = G + std::sqrt(q2 * std::max(0.0, var_G));
    return {G_hi > 0.0 ? std::max(0.0, T_lo / G_hi) : 0.0, kInf, false};
  }
  const double root = std::sqrt(std::max(0.0, b * b - a * c));
  return {std::max(0.0, (b - root) / a), (b + root) / a, true};
}

NoiseScaleTracker::NoiseScaleTracker(double beta, std::size_t window)
    : beta_(beta), window_(std::max<std::size_t>(window, 1)) {}

void NoiseScaleTracker::reset() {
  *this = NoiseScaleTracker(beta_, window_.size());
}

void NoiseScaleTracker::save_state(std::span<double> out) const {
  out[0] = sw_, out[1] = sw2_, out[2] = sG_, out[3] = sT_, out[4] = sGG_, out[5] = sTT_;
  out[6] = sGT_, out[7] = static_cast<double>(count_);
  out[8] = static_cast<double>(window_.size());
  for (std::size_t i = 0; i < window_.size(); ++i) {
    out[9 + 2 * i] = window_[i].G_sq;
    out[10 + 2 * i] = window_[i].trace_sigma;
  }
}

void NoiseScaleTracker::load_state(std::span<const double> in) {
  sw_ = in[0], sw2_ = in[1], sG_ = in[2], sT_ = in[3], sGG_ = in[4], sTT_ = in[5], sGT_ = in[6];
  count_ = static_cast<std::int64_t>(in[7]);
  for (std::size_t i = 0; i < window_.size(); ++i) {
    window_[i] = {in[9 + 2 * i], in[10 + 2 * i]};
  }
}

void NoiseScaleTracker::add(const NoiseEstimate& e) {
  // decay every sum, then add the new estimate with weight 1 (w_i = beta^(t - i))
  sw_ = beta_ * sw_ + 1.0;
  sw2_ = beta_ * beta_ * sw2_ + 1.0;
  sG_ = beta_ * sG_ + e.G_sq;
  sT_ = beta_ * sT_ + e.trace_sigma;
  sGG_ = beta_ * sGG_ + e.G_sq * e.G_sq;
  sTT_ = beta_ * sTT_ + e.trace_sigma * e.trace_sigma;
  sGT_ = beta_ * sGT_ + e.G_sq * e.trace_sigma;
  window_[static_cast<std::size_t>(count_) % window_.size()] = e;
  ++count_;
}

namespace {

void set_ratio(NoiseScale& s, const RatioInterval& ci) {
  const ReportedRatio r = reported_ratio(s.trace_sigma, s.G_sq, ci);
  s.resolved = r.resolved;
  s.b_simple = r.value, s.ci_low = r.lo, s.ci_high = r.hi;
}

// The 95% intervals of |G|^2's and tr(Sigma)'s means from their variances: mean +- t sd, the
// lower end clamped at 0 (both are >= 0); none (NaN) where one lies wholly below 0, which holds
// no admissible value.
void set_mean_intervals(NoiseScale& s, double var_G, double var_T, double dof) {
  const double t = t_quantile_975(dof);
  const auto set = [t](double mean, double var, double& lo, double& hi) {
    const double half = t * std::sqrt(std::max(0.0, var));
    if (!(mean + half >= 0.0)) return;
    lo = std::max(0.0, mean - half), hi = mean + half;
  };
  set(s.G_sq, var_G, s.G_sq_low, s.G_sq_high);
  set(s.trace_sigma, var_T, s.trace_sigma_low, s.trace_sigma_high);
}

// B_simple and its Fieller interval from weighted sums: sw = sum w, sw2 = sum w^2, and the
// weighted sums of G, T, G^2, T^2, G T.
NoiseScale ratio_of_means(double sw, double sw2, double sG, double sT, double sGG, double sTT,
                          double sGT, std::int64_t samples) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  NoiseScale s;
  s.samples = samples;
  s.b_simple = s.ci_low = s.ci_high = kNaN;
  if (samples == 0) return s;
  s.G_sq = sG / sw;
  s.trace_sigma = sT / sw;
  s.effective_samples = sw * sw / sw2;
  if (samples < 2) return s;  // one measurement: no interval, so not resolved either
  // weighted (reliability-weights) variances and covariance of the per-step estimates, then
  // of their means: s^2 * sum w^2 / (sum w)^2 = s^2 / n_eff
  const double denom = sw - sw2 / sw;
  const double inv_n = 1.0 / s.effective_samples;
  const double var_G = std::max(0.0, (sGG - sw * s.G_sq * s.G_sq) / denom) * inv_n;
  const double var_T = std::max(0.0, (sTT - sw * s.trace_sigma * s.trace_sigma) / denom) * inv_n;
  const double cov = (sGT - sw * s.G_sq * s.trace_sigma) / denom * inv_n;
  const RatioInterval ci =
      fieller_interval(s.trace_sigma, s.G_sq, var_T, var_G, cov, s.effective_samples - 1.0);
  set_ratio(s, ci);
  set_mean_intervals(s, var_G, var_T, s.effective_samples - 1.0);
  return s;
}

}  // namespace

NoiseScale NoiseScaleTracker::averaged() const {
  return ratio_of_means(sw_, sw2_, sG_, sT_, sGG_, sTT_, sGT_, count_);
}

NoiseScale NoiseScaleTracker::now() const {
  // The window's estimates, oldest first, equally spaced (one per measurement).
  const std::size_t K = window_.size();
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(count_), K);
  std::vector<NoiseEstimate> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = window_[(static_cast<std::size_t>(count_) - n + i) % K];
  }
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  NoiseScale s;
  s.samples = static_cast<std::int64_t>(n);
  s.b_simple = s.ci_low = s.ci_high = kNaN;
  s.effective_samples = static_cast<double>(n);
  if (static_cast<std::int64_t>(n) < kLineSamples) return s;  // no residual yet
  // Least-squares lines G(u), T(u) over u = i - (n - 1)/2, evaluated at the newest
  // measurement u_e = (n - 1)/2: the window's value at the current parameters, free of the
  // first-order lag of a plain mean (which sits at the window's centre).
  const double u_e = 0.5 * static_cast<double>(n - 1);
  double mG = 0, mT = 0, Suu = 0, SuG = 0, SuT = 0;
  for (std::size_t i = 0; i < n; ++i) mG += y[i].G_sq / n, mT += y[i].trace_sigma / n;
  for (std::size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(i) - u_e;
    Suu += u * u, SuG += u * (y[i].G_sq - mG), SuT += u * (y[i].trace_sigma - mT);
  }
  const double bG = SuG / Suu, bT = SuT / Suu;
  s.G_sq = mG + bG * u_e;
  s.trace_sigma = mT + bT * u_e;
  double rGG = 0, rTT = 0, rGT = 0;  // residual sums of squares and cross products
  for (std::size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(i) - u_e;
    const double eG = y[i].G_sq - mG - bG * u, eT = y[i].trace_sigma - mT - bT * u;
    rGG += eG * eG, rTT += eT * eT, rGT += eG * eT;
  }
  // Var(prediction at u_e) = sigma^2 (1/n + u_e^2 / Suu), with n - 2 degrees of freedom.
  const double dof = static_cast<double>(n) - 2.0;
  const double leverage = 1.0 / static_cast<double>(n) + u_e * u_e / Suu;
  const RatioInterval ci = fieller_interval(s.trace_sigma, s.G_sq, rTT / dof * leverage,
                                            rGG / dof * leverage, rGT / dof * leverage, dof);
  set_ratio(s, ci);
  set_mean_intervals(s, rGG / dof * leverage, rTT / dof * leverage, dof);
  return s;
}

namespace {

// The continued fraction of the regularized incomplete beta function (modified Lentz; Press et
// al., Numerical Recipes, 3rd ed., sec. 6.4), converging for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  const auto guard = [](double v) { return std::abs(v) < kTiny ? kTiny : v; };
  double c = 1.0, d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0)), h = d;
  for (int m = 1; m <= 500; ++m) {
    const double even = m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m));
    d = 1.0 / guard(1.0 + even * d);
    c = guard(1.0 + even / c);
    h *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m));
    d = 1.0 / guard(1.0 + odd * d);
    c = guard(1.0 + odd / c);
    h *= d * c;
    if (std::abs(d * c - 1.0) < 1e-15) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

}  // namespace

// The t with P(|T| > t) = 0.05: that two-sided tail is I_{v / (v + t^2)}(v / 2, 1 / 2), falling
// in t; bisected from the normal quantile (t >= z at every dof) to a bound doubled until it
// holds the tail. Exact to double round-off at any dof (fractional: an EMA's effective count);
// until 2026-11-29 a Cornish-Fisher expansion, 0.75% narrow at 2 dof.
double t_quantile_975(double dof) {
  if (!(dof > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  const auto tail = [dof](double t) { return incomplete_beta(dof / 2, 0.5, dof / (dof + t * t)); };
  double lo = 1.959963984540054, hi = 2.0 * lo;
  while (tail(hi) > 0.05 && hi < 1e300) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (tail(mid) > 0.05 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace lbt::noise
