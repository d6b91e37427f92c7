// Per-example gradient norms of Conv2d layers; see per_example_conv.hpp.
#include "noise/per_example_conv.hpp"

#include <vector>

#include "core/gemm.hpp"

namespace lbt::noise {

void im2col_image(const ConvTap& t, const float* x, float* col) {
  const std::int64_t k = t.kernel, P = t.out_h * t.out_w;
  for (std::int64_t c = 0; c < t.in_c; ++c) {
    const float* plane = x + c * t.in_h * t.in_w;
    for (std::int64_t ki = 0; ki < k; ++ki) {
      for (std::int64_t kj = 0; kj < k; ++kj) {
        float* row = col + ((c * k + ki) * k + kj) * P;  // one row per weight (c, ki, kj)
        for (std::int64_t oy = 0; oy < t.out_h; ++oy) {
          const std::int64_t iy = oy * t.stride - t.padding + ki;
          float* out = row + oy * t.out_w;
          if (iy < 0 || iy >= t.in_h) {
            for (std::int64_t ox = 0; ox < t.out_w; ++ox) out[ox] = 0.0f;
            continue;
          }
          const float* in = plane + iy * t.in_w;
          for (std::int64_t ox = 0; ox < t.out_w; ++ox) {
            const std::int64_t ix = ox * t.stride - t.padding + kj;
            out[ox] = ix >= 0 && ix < t.in_w ? in[ix] : 0.0f;
          }
        }
      }
    }
  }
}

double add_conv_per_example_sq_norms(std::span<const ConvTap> taps, std::int64_t batch,
                                     double grad_scale, std::span<double> segment_sums) {
  const double inv_scale_sq = 1.0 / (grad_scale * grad_scale);
  double total = 0.0;
  for (const ConvTap& t : taps) {
    const std::int64_t rows = t.in_c * t.kernel * t.kernel, P = t.out_h * t.out_w;
    double weight_sum = 0.0, bias_sum = 0.0;
#pragma omp parallel reduction(+ : weight_sum, bias_sum)
    {
      // per thread: col [rows, P], g [out_c, rows] (example n's weight gradient x grad_scale)
      std::vector<float> col(static_cast<std::size_t>(rows * P)),
          g(static_cast<std::size_t>(t.out_c * rows));
#pragma omp for schedule(static)
      for (std::int64_t n = 0; n < batch; ++n) {
        const float* dyn = t.dy + n * t.out_c * P;  // dy_n: [out_c, P]
        im2col_image(t, t.x + n * t.in_c * t.in_h * t.in_w, col.data());
        // g = dy_n col^T: [out_c, P] x [P, rows]
        sgemm(false, true, static_cast<int>(t.out_c), static_cast<int>(rows), static_cast<int>(P),
              1.0f, dyn, static_cast<int>(P), col.data(), static_cast<int>(P), 0.0f, g.data(),
              static_cast<int>(rows));
        double w = 0.0;
        for (float v : g) w += static_cast<double>(v) * v;
        weight_sum += w * inv_scale_sq;
        if (t.bias_segment < 0) continue;
        for (std::int64_t o = 0; o < t.out_c; ++o) {
          double s = 0.0;  // example n's bias gradient, entry o: sum over positions
          for (std::int64_t p = 0; p < P; ++p) s += dyn[o * P + p];
          bias_sum += s * s * inv_scale_sq;
        }
      }
    }
    segment_sums[t.weight_segment] += weight_sum;
    if (t.bias_segment >= 0) segment_sums[static_cast<std::size_t>(t.bias_segment)] += bias_sum;
    total += weight_sum + bias_sum;
  }
  return total;
}

}  // namespace lbt::noise
