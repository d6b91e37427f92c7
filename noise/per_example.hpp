// Per-example gradient norms for Linear layers and the single-batch noise estimate they give
// (the second, independent estimator of McCandlish et al. 2018, arXiv:1812.06162; per-example
// norms from activations and output deltas as in Goodfellow 2015, arXiv:1510.01799).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "noise/gradient_noise.hpp"

namespace lbt::noise {

// What one Linear layer y = x W^T + b saw in the last forward/backward.
struct LinearTap {
  const float* x = nullptr;   // x: [batch, in], the layer's input
  const float* dy = nullptr;  // dy: [batch, out], d(loss)/dy as the loss wrote it (scaled)
  std::int64_t in = 0, out = 0;
  std::size_t weight_segment = 0;    // index into the segment table
  std::ptrdiff_t bias_segment = -1;  // the same, -1: no bias (a :nobias layer)
};

// Example n's gradient on one layer is delta_n x_n^T (weight) and delta_n (bias), with
// delta_n = dy_n / grad_scale (undoing the loss's 1/batch averaging), so
//   |g_n|^2 = |x_n|^2 |delta_n|^2 + |delta_n|^2 = (|x_n|^2 + 1) |delta_n|^2
// (without a bias only the first term),
// exact when each layer is applied once per example (true for MLPs). Adds sum_n over the
// batch of each segment's share into `segment_sums` ([num_segments]) and returns the total.
double add_per_example_sq_norms(std::span<const LinearTap> taps, std::int64_t batch,
                                double grad_scale, std::span<double> segment_sums);

// From n examples with mean per-example squared norm m = (1/n) sum |g_n|^2 and the batch
// gradient G_n = (1/n) sum g_n:
//   the sample covariance S = 1/(n-1) sum |g_n - G_n|^2 = n/(n-1) (m - |G_n|^2) has E[S] =
//   tr(Sigma), and since E|G_n|^2 = |G|^2 + tr(Sigma)/n,  |G|^2 = |G_n|^2 - S/n  is unbiased too.
NoiseEstimate per_example_estimate(double n, double mean_example_sq, double g_batch_sq);

}  // namespace lbt::noise
