// DeviceBatchNorm and the ResNet's elementwise and pooling kernels (batch_norm.hpp); what each
// thread computes is kernel_bodies.hpp's, tested on the CPU. A channel's sums: bn_blocks_per_
// channel() blocks each take a fixed slice of the batch's images, every thread a fixed stride of
// the slice's values, in double; a tree in shared memory per block, then one thread per channel
// adds the blocks in order. No atomics: the same sums every run.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/error.hpp"
#include "nn/batch_norm_math.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/grid_stride.cuh"
#include "nn/cuda/kernel_bodies.hpp"

namespace lbt::nn::cuda {
namespace {

using namespace grid;  // kThreads, blocks_for, first_index, stride, launched

using namespace body;  // kernel_bodies.hpp: what each thread computes

// The two sums a BatchNorm pass needs over channel c's values (kernel_bodies.hpp's terms).
struct ForwardTerms {
  const float* x;
  __device__ void add(std::int64_t e, std::int64_t c, std::int64_t HW, float, double& s1,
                      double& s2) const {
    bn_forward_terms(x, e, c, HW, s1, s2);
  }
};
struct BackwardTerms {
  const float* x;
  const float* dy;
  __device__ void add(std::int64_t e, std::int64_t, std::int64_t, float mean, double& s1,
                      double& s2) const {
    bn_backward_terms(x, dy, e, mean, s1, s2);
  }
};

// A convolution's bias gradient: dy's values alone (the second sum unused).
struct ValueTerms {
  const float* dy;
  __device__ void add(std::int64_t e, std::int64_t, std::int64_t, float, double& s1,
                      double&) const {
    value_term(dy, e, s1);
  }
};

// Grid (P blocks per channel, C): block (p, c) sums channel c over its slice of the batch
// (bn_slice) into partials[(c P + p) 2 + {0, 1}]: each thread a stride of the values, then a
// tree in shared memory.
template <class Terms>
__global__ void channel_sums_kernel(Terms terms, const float* maps, std::int64_t batch,
                                    std::int64_t C, std::int64_t HW, double* partials) {
  __shared__ double s1[kThreads], s2[kThreads];
  const std::int64_t c = blockIdx.y, P = gridDim.x, p = blockIdx.x;
  const Slice slice = bn_slice(p, P, batch);
  const float mean = maps ? load_map(maps, c).mean : 0.0f;
  double a = 0.0, b = 0.0;
  for (std::int64_t i = threadIdx.x; i < slice.images() * HW; i += kThreads)
    terms.add(bn_element(slice, i, c, C, HW), c, HW, mean, a, b);
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
    if (!train) {
      store_map(maps, c,
                bn::eval_map(s.running_mean[c], s.running_var[c], s.eps, s.gamma[c], s.beta[c]));
      continue;
    }
    double sum = 0.0, sum_squares = 0.0;
    bn_add_partials(partials, c, P, sum, sum_squares);
    store_map(maps, c,
              bn::train_map(sum, sum_squares, s.x[c * s.HW], s.count, s.momentum, s.eps, s.gamma[c],
                            s.beta[c], s.running_mean[c], s.running_var[c]));
  }
}

// One thread per channel: the channel's partial sums in block order, rounded to float.
__global__ void channel_totals_kernel(const double* partials, std::int64_t P, std::int64_t C,
                                      bool accumulate, float* out) {
  for (std::int64_t c = first_index(); c < C; c += stride())
    store_channel_total(partials, c, P, accumulate, out);
}

__global__ void grad_coefficients_kernel(const double* partials, std::int64_t P, const float* maps,
                                         const float* gamma, std::int64_t C, std::int64_t count,
                                         bool train, bool accumulate, float* dgamma, float* dbeta,
                                         float* grads) {
  for (std::int64_t c = first_index(); c < C; c += stride()) {
    double sum_dy = 0.0, sum_dy_centred = 0.0;
    bn_add_partials(partials, c, P, sum_dy, sum_dy_centred);
    store_grad(grads, c,
               bn::grad_coefficients(sum_dy, sum_dy_centred, load_map(maps, c), gamma[c], count,
                                     train, accumulate, dgamma[c], dbeta[c]));
  }
}

__global__ void apply_map_kernel(const float* x, const float* maps, float* y, std::int64_t n,
                                 std::int64_t C, std::int64_t HW) {
  for (std::int64_t i = first_index(); i < n; i += stride()) y[i] = bn_output(x, maps, i, C, HW);
}

__global__ void input_grad_kernel(const float* x, const float* dy, const float* maps,
                                  const float* grads, float* dx, std::int64_t n, std::int64_t C,
                                  std::int64_t HW) {
  for (std::int64_t i = first_index(); i < n; i += stride())
    dx[i] = bn_input_grad(x, dy, maps, grads, i, C, HW);
}

__global__ void add_relu_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) y[i] = relu_of_sum(a[i], b[i]);
}

__global__ void add_into_kernel(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += stride()) y[i] += x[i];
}

__global__ void global_avg_pool_forward_kernel(const float* x, float* y, std::int64_t planes,
                                               std::int64_t plane, float scale) {
  for (std::int64_t p = first_index(); p < planes; p += stride())
    y[p] = plane_mean(x, p, plane, scale);
}

__global__ void global_avg_pool_backward_kernel(const float* dy, float* dx, std::int64_t planes,
                                                std::int64_t plane, float scale) {
  for (std::int64_t i = first_index(); i < planes * plane; i += stride())
    dx[i] = dy[i / plane] * scale;
}

__global__ void avg_pool_forward_kernel(const float* x, float* y, std::int64_t planes,
                                        std::int64_t h, std::int64_t w, std::int64_t k,
                                        std::int64_t ho, std::int64_t wo, float scale) {
  for (std::int64_t i = first_index(); i < planes * ho * wo; i += stride())
    y[i] = avg_pool_output(x, i, h, w, k, ho, wo, scale);
}

// One thread per input element: its window's gradient, or 0 past the last window.
__global__ void avg_pool_backward_kernel(const float* dy, float* dx, std::int64_t planes,
                                         std::int64_t h, std::int64_t w, std::int64_t k,
                                         std::int64_t ho, std::int64_t wo, float scale) {
  for (std::int64_t i = first_index(); i < planes * h * w; i += stride())
    dx[i] = avg_pool_input_grad(dy, i, h, w, k, ho, wo, scale);
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
      partials_(static_cast<std::size_t>(shape.c * bn_blocks_per_channel(max_batch, shape.c) * 2)) {
  if (opt_.relu) throw Error("DeviceBatchNorm: the GPU's network applies the ReLU as a layer");
}

void DeviceBatchNorm::forward(const float* x, float* y, std::int64_t batch, bool train,
                              const float* gamma, const float* beta) {
  const std::int64_t C = shape_.c, HW = shape_.plane(), P = bn_blocks_per_channel(batch, C);
  if (train && batch * HW < 2)
    throw ConfigError("BatchNorm in train mode needs more than one value per channel, got batch " +
                          std::to_string(batch) + " of " + shape_.text(),
                      "use a micro-batch of at least 2");
  last_train_ = train;
  if (train) {
    channel_sums_kernel<<<dim3(static_cast<unsigned>(P), static_cast<unsigned>(C)), kThreads>>>(
        ForwardTerms{x}, nullptr, batch, C, HW, partials_.data());
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
  const std::int64_t C = shape_.c, HW = shape_.plane(), P = bn_blocks_per_channel(batch, C);
  channel_sums_kernel<<<dim3(static_cast<unsigned>(P), static_cast<unsigned>(C)), kThreads>>>(
      BackwardTerms{x, dy}, map_.data(), batch, C, HW, partials_.data());
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

std::size_t channel_sum_partials(std::int64_t batch, std::int64_t C) {
  return static_cast<std::size_t>(C * bn_blocks_per_channel(batch, C) * 2);
}

void channel_sums(const float* x, std::int64_t batch, std::int64_t C, std::int64_t HW,
                  double* partials, float* out, bool accumulate) {
  const std::int64_t P = bn_blocks_per_channel(batch, C);
  channel_sums_kernel<<<dim3(static_cast<unsigned>(P), static_cast<unsigned>(C)), kThreads>>>(
      ValueTerms{x}, nullptr, batch, C, HW, partials);
  launched("channel_sums_kernel (sums per channel)");
  channel_totals_kernel<<<blocks_for(C), kThreads>>>(partials, P, C, accumulate, out);
  launched("channel_totals_kernel");
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
