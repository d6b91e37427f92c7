// The fused optimizer kernels: one block per chunk, each thread a strided share of it, the
// update of one element optim/update_rules.hpp's (the CPU kernels call the same functions).
#include <cuda_runtime.h>

#include "core/cuda/check.cuh"
#include "optim/cuda/kernels.hpp"

namespace lbt::optim::cuda {
namespace {

constexpr int kThreads = 256;

template <class Body>
__device__ void for_chunk(const DeviceChunk& c, Body body) {
  for (std::int64_t i = c.offset + threadIdx.x; i < c.end; i += kThreads) body(i);
}

// The block's K sums, its threads' parts added in a fixed tree; written by thread 0.
template <int K>
__device__ void block_sums(double (&mine)[K], double* out) {
  __shared__ double lane[K][kThreads];
  for (int k = 0; k < K; ++k) lane[k][threadIdx.x] = mine[k];
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      for (int k = 0; k < K; ++k) lane[k][threadIdx.x] += lane[k][threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int k = 0; k < K; ++k) out[k] = lane[k][0];
}

__global__ void sgd_kernel(ChunkLaunch c, float* w, const float* g, float* buf,
                           rules::SgdCoefficients k) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  for_chunk(chunk, [&](std::int64_t i) {
    const float g_prime = rules::transformed_grad(g[i], w[i], s.s0, s.s1);
    if (buf)
      rules::sgd_momentum(w[i], buf[i], g_prime, k);
    else
      rules::sgd_plain(w[i], g_prime, k.lr);
  });
}

__global__ void adam_kernel(ChunkLaunch c, float* w, const float* g, float* m, float* v, float lr,
                            rules::AdamCoefficients k) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  for_chunk(chunk, [&](std::int64_t i) {
    rules::adam(w[i], m[i], v[i], rules::transformed_grad(g[i], w[i], s.s0, s.s1), s.s2, lr, k);
  });
}

__global__ void lars_norms_kernel(ChunkLaunch c, const float* w, const float* g, double* parts) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  double sums[3] = {0.0, 0.0, 0.0};
  if (s.s3 != 0.0f) {
    const double beta = s.s0;
    for_chunk(chunk, [&](std::int64_t i) {
      const double wi = w[i], gi = g[i], ui = gi + beta * wi;
      sums[0] += rules::square(wi);
      sums[1] += rules::square(gi);
      sums[2] += rules::square(ui);
    });
  }
  block_sums<3>(sums, parts + 3 * blockIdx.x);
}

__global__ void lars_kernel(ChunkLaunch c, float* w, const float* g, float* v, float one_minus_mu) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  for_chunk(chunk, [&](std::int64_t i) {
    if (v)
      rules::lars_momentum(w[i], v[i], g[i], s.s0, s.s1, s.s2, one_minus_mu);
    else
      rules::lars_plain(w[i], g[i], s.s0, s.s1, s.s2);
  });
}

__global__ void lamb_moments_kernel(ChunkLaunch c, float* w, const float* g, float* m, float* v,
                                    float lr, rules::AdamCoefficients k, double* parts) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  double sums[2] = {0.0, 0.0};
  const bool trusted = s.s3 != 0.0f;
  for_chunk(chunk, [&](std::int64_t i) {
    if (!trusted) return rules::adam(w[i], m[i], v[i], g[i], s.s0, lr, k);
    rules::adam_moments(m[i], v[i], g[i], k);
    sums[0] += rules::square(w[i]);
    sums[1] += rules::square(rules::adam_direction(m[i], v[i], w[i], s.s0, k));
  });
  block_sums<2>(sums, parts + 2 * blockIdx.x);
}

__global__ void lamb_update_kernel(ChunkLaunch c, float* w, const float* m, const float* v,
                                   rules::AdamCoefficients k) {
  const DeviceChunk chunk = c.chunks[blockIdx.x];
  const SegmentScalars s = c.scalars[chunk.segment];
  if (s.s3 == 0.0f) return;
  for_chunk(chunk, [&](std::int64_t i) {
    w[i] -= s.s1 * rules::adam_direction(m[i], v[i], w[i], s.s0, k);
  });
}

void launched(const char* what) {
  lbt::cuda::check(cudaGetLastError(), what);
}

}  // namespace

void sgd(const ChunkLaunch& c, float* w, const float* g, float* momentum,
         const rules::SgdCoefficients& k) {
  sgd_kernel<<<c.num_chunks, kThreads>>>(c, w, g, momentum, k);
  launched("sgd_kernel");
}

void adam(const ChunkLaunch& c, float* w, const float* g, float* m, float* v, float lr,
          const rules::AdamCoefficients& k) {
  adam_kernel<<<c.num_chunks, kThreads>>>(c, w, g, m, v, lr, k);
  launched("adam_kernel");
}

void lars_norms(const ChunkLaunch& c, const float* w, const float* g, double* parts) {
  lars_norms_kernel<<<c.num_chunks, kThreads>>>(c, w, g, parts);
  launched("lars_norms_kernel");
}

void lars(const ChunkLaunch& c, float* w, const float* g, float* momentum, float one_minus_mu) {
  lars_kernel<<<c.num_chunks, kThreads>>>(c, w, g, momentum, one_minus_mu);
  launched("lars_kernel");
}

void lamb_moments(const ChunkLaunch& c, float* w, const float* g, float* m, float* v, float lr,
                  const rules::AdamCoefficients& k, double* parts) {
  lamb_moments_kernel<<<c.num_chunks, kThreads>>>(c, w, g, m, v, lr, k, parts);
  launched("lamb_moments_kernel");
}

void lamb_update(const ChunkLaunch& c, float* w, const float* m, const float* v,
                 const rules::AdamCoefficients& k) {
  lamb_update_kernel<<<c.num_chunks, kThreads>>>(c, w, m, v, k);
  launched("lamb_update_kernel");
}

}  // namespace lbt::optim::cuda
