// DeviceBatchNorm and the ResNet's elementwise and pooling kernels (batch_norm.hpp). A channel's
// sums: blocks_per_channel() blocks each take a fixed slice of the batch's images, every thread a
// fixed stride of the slice's values, in double; a tree in shared memory per block, then one
// thread per channel adds the blocks in order. No atomics: the same sums every run.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/error.hpp"
#include "nn/batch_norm_math.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/grid_stride.cuh"

namespace lbt::nn::cuda {
namespace {

using namespace grid;  // kThreads, blocks_for, first_index, stride, launched

// The layout of the per-channel records on the device.
constexpr int kMapFloats = 4;   // bn::ChannelMap
constexpr int kGradFloats = 3;  // bn::GradCoefficients
__device__ bn::ChannelMap load_map(const float* maps, std::int64_t c) {
  const float* m = maps + c * kMapFloats;
  return {m[0], m[1], m[2], m[3]};
}

// The two sums a BatchNorm pass needs over channel c's values: forward, d = x - k and d^2 with
// k = x[c, 0] of the first image (the CPU's shift); backward, dy and dy (x - mean).
struct ForwardTerms {
  const float* x;
  __device__ void at(std::int64_t i, std::int64_t first, float, double& s1, double& s2) const {
    const float d = x[i] - x[first];
    s1 += d;
    s2 += static_cast<double>(d) * d;
  }
};
struct BackwardTerms {
  const float* x;
  const float* dy;
  __device__ void at(std::int64_t i, std::int64_t, float mean, double& s1, double& s2) const {
    s1 += dy[i];
    s2 += static_cast<double>(dy[i]) * (x[i] - mean);
  }
};

// Grid (blocks per channel, C): block (p, c) sums channel c over images [p per, (p + 1) per)
// into partials[(c P + p) 2 + {0, 1}].
template <class Terms>
__global__ void channel_sums_kernel(Terms terms, const float* maps, std::int64_t batch,
                                    std::int64_t C, std::int64_t HW, std::int64_t per,
                                    double* partials) {
  __shared__ double s1[kThreads], s2[kThreads];
  const std::int64_t c = blockIdx.y, P = gridDim.x, p = blockIdx.x;
  const std::int64_t n0 = p * per, n1 = n0 + per < batch ? n0 + per : batch;
  const float mean = maps ? maps[c * kMapFloats] : 0.0f;
  double a = 0.0, b = 0.0;
  for (std::int64_t i = threadIdx.x; i < (n1 - n0) * HW; i += kThreads) {
    const std::int64_t n = n0 + i / HW;
    terms.at((n * C + c) * HW + i % HW, c * HW, mean, a, b);
  }
  s1[threadIdx.x] = a;
  s2[threadIdx.x] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      s1[threadIdx.x] += s1[threadIdx.x + half];
      s2[threadIdx.x] += s2[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[(c * P + p) * 2] = s1[0];
    partials[(c * P + p) * 2 + 1] = s2[0];
  }
}

__device__ void add_partials(const double* partials, std::int64_t c, std::int64_t P, double& s1,
                             double& s2) {
  s1 = 0.0, s2 = 0.0;
  for (std::int64_t p = 0; p < P; ++p) {
    s1 += partials[(c * P + p) * 2];
    s2 += partials[(c * P + p) * 2 + 1];
  }
}

struct Statistics {
  const float* x;
  const float* gamma;
  const float* beta;
  float* running_mean;
  float* running_var;
  std::int64_t C, HW, count;
  double momentum, eps;
};

// One thread per channel: the map of train mode (from the partial sums) or eval mode.
__global__ void channel_map_kernel(Statistics s, const double* partials, std::int64_t P, bool train,
                                   float* maps) {
  for (std::int64_t c = first_index(); c < s.C; c += stride()) {
    bn::ChannelMap m;
    if (train) {
      double sum = 0.0, sum_squares = 0.0;
      add_partials(partials, c, P, sum, sum_squares);
      m = bn::train_map(sum, sum_squares, s.x[c * s.HW], s.count, s.momentum, s.eps, s.gamma[c],
                        s.beta[c], s.running_mean[c], s.running_var[c]);
    } else {
      m = bn::eval_map(s.running_mean[c], s.running_var[c], s.eps, s.gamma[c], s.beta[c]);
    }
    float* out = maps + c * kMapFloats;
    out[0] = m.mean, out[1] = m.inv_std, out[2] = m.scale, out[3] = m.shift;
  }
}

__global__ void grad_coefficients_kernel(const double* partials, std::int64_t P, const float* maps,
                                         const float* gamma, std::int64_t C, std::int64_t count,
                                         bool train, bool accumulate, float* dgamma, float* dbeta,
                                         float* grads) {
  for (std::int64_t c = first_index(); c < C; c += stride()) {
    double sum_dy = 0.0, sum_dy_centred = 0.0;
    add_partials(partials, c, P, sum_dy, sum_dy_centred);
    const bn::GradCoefficients g =
        bn::grad_coefficients(sum_dy, sum_dy_centred, load_map(maps, c), gamma[c], count, train,
                              accumulate, dgamma[c], dbeta[c]);
    float* out = grads + c * kGradFloats;
    out[0] = g.k, out[1] = g.a, out[2] = g.b;
  }
}

__global__ void apply_map_kernel(const float* x, const float* maps, float* y, std::int64_t n,
                                 std::int64_t C, std::int64_t HW) {
  for (std::int64_t i = first_index(); i < n; i += stride()) {
    const float* m = maps + (i / HW % C) * kMapFloats;
    y[i] = fmaf(x[i], m[2], m[3]);
  }
}

__global__ void input_grad_kernel(const float* x, const float* dy, const float* maps,
                                  const float* grads, float* dx, std::int64_t n, std::int64_t C,
                                  std::int64_t HW) {
  for (std::int64_t i = first_index(); i < n; i += stride()) {
    const std::int64_t c = i / HW % C;
    const float* g = grads + c * kGradFloats;
    dx[i] = bn::input_grad(x[i], dy[i], {g[0], g[1], g[2]}, maps[c * kMapFloats]);
  }
}

__global__ void add_relu_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) {
    const float v = a[i] + b[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

__global__ void add_into_kernel(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) y[i] += x[i];
}

__global__ void global_avg_pool_forward_kernel(const float* x, float* y, std::int64_t planes,
                                               std::int64_t plane, float scale) {
  for (std::int64_t p = first_index(); p < planes; p += stride()) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < plane; ++i) s += x[p * plane + i];
    y[p] = s * scale;
  }
}

__global__ void global_avg_pool_backward_kernel(const float* dy, float* dx, std::int64_t planes,
                                                std::int64_t plane, float scale) {
  for (std::int64_t i = first_index(); i < planes * plane; i += stride())
    dx[i] = dy[i / plane] * scale;
}

__global__ void avg_pool_forward_kernel(const float* x, float* y, std::int64_t planes,
                                        std::int64_t h, std::int64_t w, std::int64_t k,
                                        std::int64_t ho, std::int64_t wo, float scale) {
  for (std::int64_t i = first_index(); i < planes * ho * wo; i += stride()) {
    const std::int64_t p = i / (ho * wo), r = i / wo % ho, c = i % wo;
    const float* window = x + (p * h + r * k) * w + c * k;
    float s = 0.0f;
    for (std::int64_t a = 0; a < k; ++a)
      for (std::int64_t b = 0; b < k; ++b) s += window[a * w + b];
    y[i] = s * scale;
  }
}

// One thread per input element: its window's gradient, or 0 past the last window.
__global__ void avg_pool_backward_kernel(const float* dy, float* dx, std::int64_t planes,
                                         std::int64_t h, std::int64_t w, std::int64_t k,
                                         std::int64_t ho, std::int64_t wo, float scale) {
  for (std::int64_t i = first_index(); i < planes * h * w; i += stride()) {
    const std::int64_t p = i / (h * w), r = i / w % h / k, c = i % w / k;
    dx[i] = r < ho && c < wo ? dy[(p * ho + r) * wo + c] * scale : 0.0f;
  }
}

}  // namespace

DeviceBatchNorm::DeviceBatchNorm(Shape3 shape, std::int64_t max_batch, BatchNormOptions options)
    : shape_(shape),
      opt_(options),
      running_mean_(static_cast<std::size_t>(shape.c)),
      running_var_(
          std::span<const float>(std::vector<float>(static_cast<std::size_t>(shape.c), 1.0f))),
      map_(static_cast<std::size_t>(shape.c * kMapFloats)),
      grad_(static_cast<std::size_t>(shape.c * kGradFloats)),
      partials_(static_cast<std::size_t>(shape.c * blocks_per_channel(max_batch) * 2)) {
  if (opt_.relu) throw Error("DeviceBatchNorm: the GPU's network applies the ReLU as a layer");
}

// Enough blocks to fill a GPU (about 512 in all) without slicing the batch finer than an image.
std::int64_t DeviceBatchNorm::blocks_per_channel(std::int64_t batch) const {
  const std::int64_t wanted = std::max<std::int64_t>(1, 512 / shape_.c);
  return std::max<std::int64_t>(1, std::min(batch, wanted));
}

void DeviceBatchNorm::forward(const float* x, float* y, std::int64_t batch, bool train,
                              const float* gamma, const float* beta) {
  const std::int64_t C = shape_.c, HW = shape_.plane(), P = blocks_per_channel(batch);
  if (train && batch * HW < 2)
    throw ConfigError("BatchNorm in train mode needs more than one value per channel, got batch " +
                          std::to_string(batch) + " of " + shape_.text(),
                      "use a micro-batch of at least 2");
  last_train_ = train;
  if (train) {
    const std::int64_t per = (batch + P - 1) / P;
    channel_sums_kernel<<<dim3(static_cast<unsigned>(P), static_cast<unsigned>(C)), kThreads>>>(
        ForwardTerms{x}, nullptr, batch, C, HW, per, partials_.data());
    launched("channel_sums_kernel (BatchNorm forward)");
  }
  const Statistics s{x, gamma, beta,       running_mean_.data(), running_var_.data(),
                     C, HW,    batch * HW, opt_.momentum,        opt_.eps};
  channel_map_kernel<<<blocks_for(C), kThreads>>>(s, partials_.data(), P, train, map_.data());
  launched("channel_map_kernel");
  const std::int64_t n = batch * shape_.size();
  apply_map_kernel<<<blocks_for(n), kThreads>>>(x, map_.data(), y, n, C, HW);
  launched("apply_map_kernel");
}

void DeviceBatchNorm::backward(const float* x, const float* dy, float* dx, std::int64_t batch,
                               bool accumulate, const float* gamma, float* dgamma, float* dbeta) {
  const std::int64_t C = shape_.c, HW = shape_.plane(), P = blocks_per_channel(batch);
  const std::int64_t per = (batch + P - 1) / P;
  channel_sums_kernel<<<dim3(static_cast<unsigned>(P), static_cast<unsigned>(C)), kThreads>>>(
      BackwardTerms{x, dy}, map_.data(), batch, C, HW, per, partials_.data());
  launched("channel_sums_kernel (BatchNorm backward)");
  grad_coefficients_kernel<<<blocks_for(C), kThreads>>>(partials_.data(), P, map_.data(), gamma, C,
                                                        batch * HW, last_train_, accumulate, dgamma,
                                                        dbeta, grad_.data());
  launched("grad_coefficients_kernel");
  if (!dx) return;
  const std::int64_t n = batch * shape_.size();
  input_grad_kernel<<<blocks_for(n), kThreads>>>(x, dy, map_.data(), grad_.data(), dx, n, C, HW);
  launched("input_grad_kernel");
}

void add_relu(const float* a, const float* b, float* y, std::int64_t n) {
  add_relu_kernel<<<blocks_for(n), kThreads>>>(a, b, y, n);
  launched("add_relu_kernel");
}

void add_into(const float* x, float* y, std::int64_t n) {
  add_into_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  launched("add_into_kernel");
}

void global_avg_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t plane) {
  const float scale = 1.0f / static_cast<float>(plane);
  global_avg_pool_forward_kernel<<<blocks_for(planes), kThreads>>>(x, y, planes, plane, scale);
  launched("global_avg_pool_forward_kernel");
}

void global_avg_pool_backward(const float* dy, float* dx, std::int64_t planes, std::int64_t plane) {
  const float scale = 1.0f / static_cast<float>(plane);
  global_avg_pool_backward_kernel<<<blocks_for(planes * plane), kThreads>>>(dy, dx, planes, plane,
                                                                            scale);
  launched("global_avg_pool_backward_kernel");
}

void avg_pool_forward(const float* x, float* y, std::int64_t planes, std::int64_t h, std::int64_t w,
                      std::int64_t k) {
  const std::int64_t ho = h / k, wo = w / k;
  const float scale = 1.0f / static_cast<float>(k * k);
  avg_pool_forward_kernel<<<blocks_for(planes * ho * wo), kThreads>>>(x, y, planes, h, w, k, ho, wo,
                                                                      scale);
  launched("avg_pool_forward_kernel");
}

void avg_pool_backward(const float* dy, float* dx, std::int64_t planes, std::int64_t h,
                       std::int64_t w, std::int64_t k) {
  const std::int64_t ho = h / k, wo = w / k;
  const float scale = 1.0f / static_cast<float>(k * k);
  avg_pool_backward_kernel<<<blocks_for(planes * h * w), kThreads>>>(dy, dx, planes, h, w, k, ho,
                                                                     wo, scale);
  launched("avg_pool_backward_kernel");
}

}  // namespace lbt::nn::cuda
