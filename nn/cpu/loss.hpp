// Losses over a batch. Each returns the *sum* of per-example losses and writes
// dlogits = d(sum loss)/d(logits) * grad_scale, so the caller picks the averaging
// (1 / global batch for training, which keeps accumulation and data parallelism exact).
#pragma once
#include <cstdint>

namespace lbt::nn {

// Softmax cross-entropy. logits: [batch, classes], labels: [batch].
// dlogits (may be null): (softmax - onehot) * grad_scale. correct: number of argmax hits.
// row_losses (may be null): [batch], each example's loss (the evaluation's spread of them).
double softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t batch,
                             std::int64_t classes, float* dlogits, float grad_scale,
                             std::int64_t* correct, double* row_losses = nullptr);

// Mean squared error with a 1/2 factor: sum_i 0.5 * |pred_i - target_i|^2.
// pred, target: [batch, dim]; dpred (may be null) = (pred - target) * grad_scale.
double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                          std::int64_t dim, float* dpred, float grad_scale);

}  // namespace lbt::nn
