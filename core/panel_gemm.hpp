// C (+)= A B with small register-blocked kernels, for products whose operands are laid out for
// the caller rather than for a BLAS: A is read element by element at any two strides (rows
// and inner dimension), so it may be a transposed or interleaved view; B is row-major with a
// multiple of 16 columns. No packing copies: meant for operands that fit in L2 per call (the
// Winograd convolution's 36 products per tile group, a fully connected layer at small
// batches), where OpenBLAS's packing costs as much as the multiplies (shared/BENCHMARKING.md).
#pragma once
#include <cstddef>

namespace lbt {

// C[rows][cols] (+)= sum over k < K of A(i, k) B[k][cols], A(i, k) = a[i * a_row + k * a_k],
// B [K][cols] with row stride ldb, C with row stride ldc; cols a multiple of 16. With
// accumulate false, C is overwritten. Single-threaded: callers split rows or columns.
void panel_gemm(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_k,
                const float* b, std::ptrdiff_t ldb, float* c, std::ptrdiff_t ldc, bool accumulate);

}  // namespace lbt
