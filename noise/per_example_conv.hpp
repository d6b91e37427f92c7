// Exact per-example gradient norms of 2-D convolutions (the per-example estimator of
// McCandlish et al. 2018, arXiv:1812.06162, App. A.1, extended from Linear layers to Conv2d):
// example n's weight gradient is the product dy_n col_n^T of its output gradient and its
// im2col matrix (Chellapilla et al. 2006), so its squared norm is one small GEMM per example.
// Valid only where examples do not interact inside the model (no BatchNorm).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace lbt::noise {

// What one convolution y = W * x + b (NCHW, W: [out_c, in_c, k, k]) saw in the last
// forward/backward.
struct ConvTap {
  const float* x = nullptr;   // x: [batch, in_c, in_h, in_w], the layer's input
  const float* dy = nullptr;  // dy: [batch, out_c, out_h, out_w], d(loss)/dy as the loss wrote it
  std::int64_t in_c = 0, in_h = 0, in_w = 0;
  std::int64_t out_c = 0, out_h = 0, out_w = 0;
  std::int64_t kernel = 1, stride = 1, padding = 0;
  std::size_t weight_segment = 0;
  std::ptrdiff_t bias_segment = -1;  // -1: no bias
};

// For each tap and example n, with delta_n = dy_n / grad_scale (undoing the loss's 1/batch):
//   weight: |delta_n col_n^T|_F^2   (col_n = im2col(x_n): [in_c k k, out_h out_w])
//   bias:   sum_o (sum_p delta_n[o, p])^2
// Adds the batch sums into `segment_sums` ([num_segments]) and returns their total.
// Why not the Gram form |g_n|^2 = sum_{p,q} (delta_p . delta_q)(col_p . col_q) (Goodfellow
// 2015 generalised): it costs P^2 (out_c + rows) per example against out_c rows P here; for
// the simple CNN (P = 784 and 196) the direct product is 3x to 55x cheaper.
double add_conv_per_example_sq_norms(std::span<const ConvTap> taps, std::int64_t batch,
                                     double grad_scale, std::span<double> segment_sums);

// col: [in_c k k, out_h out_w] from one image x: [in_c, in_h, in_w] (zeros in the padding).
void im2col_image(const ConvTap& tap, const float* x, float* col);

}  // namespace lbt::noise
