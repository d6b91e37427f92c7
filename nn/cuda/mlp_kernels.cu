// DeviceMlp's and DeviceNet's kernels: grid-stride loops over elements, one thread per row where a
// row is reduced (no atomics, so every run adds in the same order).
#include <cuda_runtime.h>

#include "core/cuda/check.cuh"
#include "nn/cuda/grid_stride.cuh"
#include "nn/cuda/mlp_kernels.hpp"

namespace lbt::nn::cuda {
namespace {

using namespace grid;  // kThreads, blocks_for, first_index, stride, launched

__global__ void broadcast_rows_kernel(const float* b, float* y, std::int64_t rows,
                                      std::int64_t cols) {
  for (std::int64_t i = first_index(); i < rows * cols; i += stride()) y[i] = b[i % cols];
}

// x < 0 ? 0 : x, as the CPU's (nn/cpu/relu_isa.cpp): a NaN passes through, so the divergence
// checks see it (x > 0 ? x : 0 zeroed it, and a diverging GPU run trained on with dead units).
__global__ void relu_forward_kernel(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void softmax_cross_entropy_kernel(const float* logits, const std::int32_t* labels,
                                             std::int64_t rows, std::int64_t classes,
                                             float* dlogits, float grad_scale, double* row_loss,
                                             std::int32_t* row_hit) {
  for (std::int64_t r = first_index(); r < rows; r += stride()) {
    const float* z = logits + r * classes;
    std::int64_t argmax = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (z[c] > z[argmax]) argmax = c;
    const float zmax = z[argmax];
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) sum += exp(static_cast<double>(z[c] - zmax));
    const std::int32_t y = labels[r];
    row_loss[r] = log(sum) - static_cast<double>(z[y] - zmax);
    row_hit[r] = argmax == y;
    const double inv = 1.0 / sum;
    for (std::int64_t c = 0; c < classes; ++c) {
      const double p = exp(static_cast<double>(z[c] - zmax)) * inv;
      dlogits[r * classes + c] = static_cast<float>((p - (c == y ? 1.0 : 0.0)) * grad_scale);
    }
  }
}

// One thread per output element of [planes, ho, wo]: the window's maximum.
__global__ void max_pool_forward_kernel(const float* x, float* y, std::int64_t planes,
                                        std::int64_t h, std::int64_t w, std::int64_t k,
                                        std::int64_t ho, std::int64_t wo) {
  for (std::int64_t i = first_index(); i < planes * ho * wo; i += stride()) {
    const std::int64_t p = i / (ho * wo), r = i / wo % ho, c = i % wo;
    const float* window = x + (p * h + r * k) * w + c * k;
    float best = window[0];
    for (std::int64_t a = 0; a < k; ++a) {
      for (std::int64_t b = 0; b < k; ++b) {
        const float v = window[a * w + b];
        best = v > best || v != v ? v : best;  // a NaN wins (fmaxf dropped it), as for the ReLU
      }
    }
    y[i] = best;
  }
}

// Windows side by side (stride = kernel): each input element is in at most one window, so the
// gradient goes to the window's first maximum in row-major order (the CPU's MaxPool2d) with no
// atomics. dx must be zero beforehand (rows and columns past the last window get nothing).
__global__ void max_pool_backward_kernel(const float* x, const float* y, const float* dy, float* dx,
                                         std::int64_t planes, std::int64_t h, std::int64_t w,
                                         std::int64_t k, std::int64_t ho, std::int64_t wo) {
  for (std::int64_t i = first_index(); i < planes * ho * wo; i += stride()) {
    const std::int64_t p = i / (ho * wo), r = i / wo % ho, c = i % wo;
    const std::int64_t corner = (p * h + r * k) * w + c * k;
    for (std::int64_t a = 0, found = 0; a < k && !found; ++a)
      for (std::int64_t b = 0; b < k && !found; ++b)
        if (x[corner + a * w + b] == y[i]) {
          dx[corner + a * w + b] = dy[i];
          found = 1;
        }
  }
}

}  // namespace

void broadcast_rows(const float* b, float* y, std::int64_t rows, std::int64_t cols) {
  broadcast_rows_kernel<<<blocks_for(rows * cols), kThreads>>>(b, y, rows, cols);
  launched("broadcast_rows_kernel");
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  relu_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  launched("relu_forward_kernel");
}

void relu_backward(const float* y, const float* dy, float* dx, std::int64_t n) {
  relu_backward_kernel<<<blocks_for(n), kThreads>>>(y, dy, dx, n);
  launched("relu_backward_kernel");
}

void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t rows,
                           std::int64_t classes, float* dlogits, float grad_scale, double* row_loss,
                           std::int32_t* row_hit) {
  softmax_cross_entropy_kernel<<<blocks_for(rows), kThreads>>>(
      logits, labels, rows, classes, dlogits, grad_scale, row_loss, row_hit);
  launched("softmax_cross_entropy_kernel");
}

void max_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t h, std::int64_t w,
                      std::int64_t k) {
  const std::int64_t ho = h / k, wo = w / k;
  max_pool_forward_kernel<<<blocks_for(planes * ho * wo), kThreads>>>(x, y, planes, h, w, k, ho,
                                                                      wo);
  launched("max_pool_forward_kernel");
}

void max_pool_backward(const float* x, const float* y, const float* dy, float* dx,
                       std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t k) {
  const std::int64_t ho = h / k, wo = w / k;
  lbt::cuda::check(cudaMemset(dx, 0, static_cast<std::size_t>(planes * h * w) * sizeof(float)),
                   "cudaMemset");
  max_pool_backward_kernel<<<blocks_for(planes * ho * wo), kThreads>>>(x, y, dy, dx, planes, h, w,
                                                                       k, ho, wo);
  launched("max_pool_backward_kernel");
}

}  // namespace lbt::nn::cuda
