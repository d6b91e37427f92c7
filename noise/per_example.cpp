// Per-example gradient norms of Linear layers; see per_example.hpp.
#include "noise/per_example.hpp"

#include "noise/per_example_rule.hpp"

namespace lbt::noise {

double add_per_example_sq_norms(std::span<const LinearTap> taps, std::int64_t batch,
                                double grad_scale, std::span<double> segment_sums) {
  const double inv_scale_sq = 1.0 / (grad_scale * grad_scale);
  double total = 0.0;
  for (const LinearTap& t : taps) {
    double weight_sum = 0.0, bias_sum = 0.0;
#pragma omp parallel for reduction(+ : weight_sum, bias_sum) if (batch * (t.in + t.out) > 262144)
    for (std::int64_t n = 0; n < batch; ++n) {
      const float* x = t.x + n * t.in;     // x_n: [in]
      const float* dy = t.dy + n * t.out;  // dy_n: [out]
      float x_sq = 0.0f, dy_sq = 0.0f;
#pragma omp simd reduction(+ : x_sq)
      for (std::int64_t i = 0; i < t.in; ++i) x_sq += x[i] * x[i];
#pragma omp simd reduction(+ : dy_sq)
      for (std::int64_t o = 0; o < t.out; ++o) dy_sq += dy[o] * dy[o];
      add_example_shares(x_sq, dy_sq, inv_scale_sq, weight_sum, bias_sum);
    }
    segment_sums[t.weight_segment] += weight_sum;
    total += weight_sum;
    if (t.bias_segment >= 0) {  // a bias-free layer has no |delta_n|^2 term
      segment_sums[static_cast<std::size_t>(t.bias_segment)] += bias_sum;
      total += bias_sum;
    }
  }
  return total;
}

NoiseEstimate per_example_estimate(double n, double mean_example_sq, double g_batch_sq) {
  NoiseEstimate e;
  // S = n/(n-1) (mean |g_n|^2 - |G_n|^2), unbiased for tr(Sigma)
  e.trace_sigma = n / (n - 1.0) * (mean_example_sq - g_batch_sq);
  // |G|^2 = |G_n|^2 - tr(Sigma)/n
  e.G_sq = g_batch_sq - e.trace_sigma / n;
  return e;
}

}  // namespace lbt::noise
