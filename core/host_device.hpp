// LBT_HOST_DEVICE marks a function both compilers build: g++ for the CPU kernels, nvcc for the
// CUDA kernels (__host__ __device__). A per-element formula written once under it is the same
// arithmetic on both backends, so the CPU tests cover the GPU's update rules.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define LBT_HOST_DEVICE __host__ __device__
#else
#define LBT_HOST_DEVICE
#endif

namespace lbt {

// sqrt in float, correctly rounded on both sides (nvcc's default -prec-sqrt=true; IEEE on x86).
LBT_HOST_DEVICE inline float sqrt_f(float x) {
#if defined(__CUDA_ARCH__)
  return sqrtf(x);
#else
  return std::sqrt(x);
#endif
}

}  // namespace lbt
