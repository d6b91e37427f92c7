// Elementwise, row and pooling kernels of DeviceMlp and DeviceNet (device_mlp.cpp,
// device_net.cpp).
#pragma once
#include <cstdint>

namespace lbt::nn::cuda {

// y[r, :] = b for every row r < rows.
void broadcast_rows(const float* b, float* y, std::int64_t rows, std::int64_t cols);
// y = x < 0 ? 0 : x, n elements (a NaN passes, as on the CPU).
void relu_forward(const float* x, float* y, std::int64_t n);
// dx = dy where y > 0, else 0 (CPU nn/cpu/relu.cpp reads the output the same way).
void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n);
// Per row: loss = log sum exp(z - zmax) - (z_y - zmax) in double, hit = argmax == y, and
// dz = (softmax - onehot) x grad_scale (nn/cpu/loss.cpp's arithmetic).
void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows,
                           std::int64_t classes, float* dlogits, float grad_scale, double* row_loss,
                           std::int32_t* row_hit);

// Max pooling over `planes` planes of [h, w] (NCHW: planes = batch x channels) in k x k windows
// side by side (stride k, no padding): y [planes, h / k, w / k]; a NaN in a window wins.
void max_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t h, std::int64_t w,
                      std::int64_t k);
// dx (zeroed here) gets dy at each window's first maximum in row-major order, as the CPU's
// MaxPool2d.
void max_pool_backward(const float* x, const float* y, const float* dy, float* dx,
                       std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t k);

}  // namespace lbt::nn::cuda
