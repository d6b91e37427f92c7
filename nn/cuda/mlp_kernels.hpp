// Elementwise and row kernels of DeviceMlp (device_mlp.cpp).
#pragma once
#include <cstdint>

namespace lbt::nn::cuda {

// y[r, :] = b for every row r < rows.
void broadcast_rows(const float* b, float* y, std::int64_t rows, std::int64_t cols);
// y = max(0, x), n elements.
void relu_forward(const float* x, float* y, std::int64_t n);
// dx = dy where y > 0, else 0 (CPU nn/cpu/relu.cpp reads the output the same way).
void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n);
// Per row: loss = log sum exp(z - zmax) - (z_y - zmax) in double, hit = argmax == y, and
// dz = (softmax - onehot) x grad_scale (nn/cpu/loss.cpp's arithmetic).
void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows,
                           std::int64_t classes, float* dlogits, float grad_scale, double* row_loss,
                           std::int32_t* row_hit);

}  // namespace lbt::nn::cuda
