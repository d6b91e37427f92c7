// Copies and fills of short rows (an image row of 8 to 32 floats) as plain vector loops. GCC
// turns such loops into memcpy/memset calls, whose call and dispatch cost more than copying a
// few cache lines: they were 9% of a ResNet-8 training step in im2col and padding. Functions
// that use these helpers carry LBT_NO_LIBCALL_LOOPS too, so that they stay inlined loops.
#pragma once
#include <cstdint>

#include "core/vec16.hpp"  // LBT_VEC_BEGIN: these loops compile differently per ISA

#if defined(__GNUC__) && !defined(__clang__)
#define LBT_NO_LIBCALL_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define LBT_NO_LIBCALL_LOOPS
#endif

namespace lbt::nn {
LBT_VEC_BEGIN

LBT_NO_LIBCALL_LOOPS inline void copy_row(float* __restrict dst, const float* __restrict src,
                                          std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

LBT_NO_LIBCALL_LOOPS inline void zero_row(float* dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
}

LBT_VEC_END
}  // namespace lbt::nn
