// Softmax cross-entropy (max-subtracted for stability) and half squared error.
#include "nn/cpu/loss.hpp"

#include <algorithm>
#include <cmath>

namespace lbt::nn {

double softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t batch,
                             std::int64_t classes, float* dlogits, float grad_scale,
                             std::int64_t* correct, double* row_losses) {
  double total = 0.0;
  std::int64_t hits = 0;
#pragma omp parallel for reduction(+ : total, hits) if (batch >= 1024)
  for (std::int64_t r = 0; r < batch; ++r) {
    const float* z = logits + r * classes;
    const std::int64_t argmax = std::max_element(z, z + classes) - z;
    const float zmax = z[argmax];
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - zmax));
    const std::int32_t y = labels[r];
    // loss = log(sum exp(z - zmax)) - (z_y - zmax)
    const double loss = std::log(sum) - static_cast<double>(z[y] - zmax);
    total += loss;
    if (row_losses) row_losses[r] = loss;
    hits += (argmax == y);
    if (dlogits) {
      float* d = dlogits + r * classes;
      const double inv = 1.0 / sum;
      for (std::int64_t c = 0; c < classes; ++c) {
        double p = std::exp(static_cast<double>(z[c] - zmax)) * inv;
        d[c] = static_cast<float>((p - (c == y ? 1.0 : 0.0)) * grad_scale);
      }
    }
  }
  if (correct) *correct = hits;
  return total;
}

double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                          std::int64_t dim, float* dpred, float grad_scale) {
  double total = 0.0;
  const std::int64_t n = batch * dim;
  for (std::int64_t i = 0; i < n; ++i) {
    const double diff = static_cast<double>(pred[i]) - target[i];
    total += 0.5 * diff * diff;
    if (dpred) dpred[i] = static_cast<float>(diff * grad_scale);
  }
  return total;
}

}  // namespace lbt::nn
