// Two-batch estimator, EMA and the B_simple interval; see gradient_noise.hpp.
#include "noise/gradient_noise.hpp"

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

void Ema::add(double x) {
  m_ = beta_ * m_ + (1.0 - beta_) * x;
  weight_ = beta_ * weight_ + (1.0 - beta_);  // = 1 - beta^t
  ++count_;
}

double Ema::value() const {
  return weight_ > 0.0 ? m_ / weight_ : 0.0;
}

NoiseScaleTracker::NoiseScaleTracker(double beta) : beta_(beta) {}

void NoiseScaleTracker::reset() {
  *this = NoiseScaleTracker(beta_);
}

void NoiseScaleTracker::save_state(std::span<double, kStateSize> out) const {
  out[0] = sw_, out[1] = sw2_, out[2] = sG_, out[3] = sT_, out[4] = sGG_, out[5] = sTT_;
  out[6] = sGT_, out[7] = static_cast<double>(count_);
}

void NoiseScaleTracker::load_state(std::span<const double, kStateSize> in) {
  sw_ = in[0], sw2_ = in[1], sG_ = in[2], sT_ = in[3], sGG_ = in[4], sTT_ = in[5], sGT_ = in[6];
  count_ = static_cast<std::int64_t>(in[7]);
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
  ++count_;
}

NoiseScale NoiseScaleTracker::current() const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  NoiseScale s;
  s.samples = count_;
  s.b_simple = s.ci_low = s.ci_high = kNaN;
  if (count_ == 0) return s;
  // bias-corrected EMAs: weighted means sum w x / sum w
  s.G_sq = sG_ / sw_;
  s.trace_sigma = sT_ / sw_;
  s.effective_samples = sw_ * sw_ / sw2_;
  if (s.G_sq > 0.0) s.b_simple = s.trace_sigma / s.G_sq;
  if (count_ < 3 || !(s.G_sq > 0.0)) return s;
  // weighted (reliability-weights) variances and covariance of the per-step estimates
  const double denom = sw_ - sw2_ / sw_;
  const double var_G = std::max(0.0, (sGG_ - sw_ * s.G_sq * s.G_sq) / denom);
  const double var_T = std::max(0.0, (sTT_ - sw_ * s.trace_sigma * s.trace_sigma) / denom);
  const double cov_GT = (sGT_ - sw_ * s.G_sq * s.trace_sigma) / denom;
  // variance of the weighted means: s^2 * sum w^2 / (sum w)^2 = s^2 / n_eff
  const double inv_n = 1.0 / s.effective_samples;
  const double R = s.b_simple;
  // delta method for R = T / G
  const double var_R =
      std::max(0.0, (var_T - 2.0 * R * cov_GT + R * R * var_G) * inv_n / (s.G_sq * s.G_sq));
  const double half = t_quantile_975(s.effective_samples - 1.0) * std::sqrt(var_R);
  s.ci_low = R - half;
  s.ci_high = R + half;
  return s;
}

double t_quantile_975(double dof) {
  if (!(dof > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (dof < 2.0) {
    // between the exact t(1) = 12.706 and t(2) = 4.303, interpolated in 1/dof (conservative)
    const double t1 = 12.7062, t2 = 4.3027;
    const double u = (1.0 / dof - 0.5) / 0.5;  // 1 at dof = 1, 0 at dof = 2
    return t2 + std::min(1.0, u) * (t1 - t2);
  }
  // Cornish-Fisher expansion of the t quantile around the normal quantile z (Abramowitz &
  // Stegun 26.7.5), four correction terms
  const double z = 1.959963984540054, v = dof;
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, z9 = z7 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

}  // namespace lbt::noise
