// The launch shape nn/cuda's kernels share (mlp_kernels.cu, batch_norm.cu): blocks of kThreads,
// grid-stride loops over n elements (at most 65535 blocks), and a check after each launch that
// turns a launch error into a DeviceError naming the kernel. nvcc only.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/check.cuh"

namespace lbt::nn::cuda::grid {

constexpr int kThreads = 256;

inline int blocks_for(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
}

__device__ inline std::int64_t first_index() {
  return blockIdx.x * std::int64_t{kThreads} + threadIdx.x;
}

__device__ inline std::int64_t stride() {
  return std::int64_t{gridDim.x} * kThreads;
}

inline void launched(const char* what) {
  lbt::cuda::check(cudaGetLastError(), what);
}

}  // namespace lbt::nn::cuda::grid
