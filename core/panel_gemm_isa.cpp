// Register-blocked panel GEMM, compiled once per ISA (cmake/isa_sources.cmake); see
// panel_gemm.hpp.
#include <cstddef>

#include "core/vec16.hpp"

namespace lbt::LBT_ISA_NS {
namespace {

using vec::load;
using vec::store;
using vec::v16;

// The register tile: at most kRows2 rows x 2 vectors of 16 floats (32 columns), or kRows1 x 1
// where a 16-wide rest is left or two vectors do not pay (kWide false). A vector of 16 floats is
// one of AVX-512's 32 zmm registers, two of AVX2's 16 ymm and four of SSE's 16 xmm registers;
// the accumulators, the B vectors and a broadcast must fit without spilling. Measured on the
// MLP's shapes: bench/panel_gemm_tiles.sh, figures in bench/cpu_paths.md.
#if defined(LBT_PANEL_TILE_ROWS1)  // a tile under measurement
constexpr int kRows2 = LBT_PANEL_TILE_ROWS2, kRows1 = LBT_PANEL_TILE_ROWS1;
constexpr bool kWide = LBT_PANEL_TILE_WIDE;
#elif defined(__AVX512F__)
constexpr int kRows2 = 12, kRows1 = 16;  // 24 or 16 zmm accumulators
constexpr bool kWide = true;
#elif defined(__AVX2__)
constexpr int kRows2 = 3, kRows1 = 6;  // 12 ymm accumulators (6 x 16: the classic AVX2 tile)
constexpr bool kWide = false;
#else
constexpr int kRows2 = 1, kRows1 = 3;  // 12 xmm accumulators
constexpr bool kWide = false;
#endif

// c[i][j..j + 16 NB) (+)= sum over k < K of a[i * a_row + k * a_k] * b[k][j..]: R rows of NB
// vectors in R x NB accumulators; per k, NB loads of b and R broadcasts of a. A_ROW > 0 fixes
// a_row at compile time, so that the R broadcasts address a with constant offsets rather than
// R index registers (which GCC spilled for R = 16).
template <int R, int NB, int A_ROW>
void gemm_block(const float* a, std::ptrdiff_t a_row_arg, std::ptrdiff_t a_k, const float* b,
                std::ptrdiff_t ldb, int K, float* c, std::ptrdiff_t ldc, bool accumulate) {
  const std::ptrdiff_t a_row = A_ROW > 0 ? A_ROW : a_row_arg;
  v16 acc[R][NB];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NB; ++j) acc[i][j] = accumulate ? load(c + i * ldc + 16 * j) : v16{};
  for (int k = 0; k < K; ++k) {
    v16 bv[NB];
    for (int j = 0; j < NB; ++j) bv[j] = load(b + k * ldb + 16 * j);
    const float* ak = a + k * a_k;
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const float s = ak[i * a_row];
      for (int j = 0; j < NB; ++j) acc[i][j] += s * bv[j];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NB; ++j) store(c + i * ldc + 16 * j, acc[i][j]);
}

#if defined(__AVX512F__)
// gemm_block<16, 1, 16> (the Winograd GEMM of 16-channel layers) with K a multiple of 4: one
// b vector per multiply-add, so the broadcasts of a, not the multiply-adds, bound the block.
// Half of them come from memory as before and half from in-register permutes of a 4-float
// load (different execution ports): 1.54-1.78 -> 1.77-1.96 multiply-adds per cycle measured.
void gemm_block_16x16_k4(const float* a, const float* b, std::ptrdiff_t ldb, int K, float* c,
                         std::ptrdiff_t ldc, bool accumulate) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    acc[i] = accumulate ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
  for (int k = 0; k < K; k += 4) {
    const __m512 b0 = _mm512_loadu_ps(b + k * ldb), b1 = _mm512_loadu_ps(b + (k + 1) * ldb);
    const __m512 b2 = _mm512_loadu_ps(b + (k + 2) * ldb), b3 = _mm512_loadu_ps(b + (k + 3) * ldb);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      const float* ai = a + i * 16 + k;
      const __m512 q = _mm512_broadcast_f32x4(_mm_loadu_ps(ai));
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(ai[0]), b0, acc[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_permute_ps(q, 0x55), b1, acc[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(ai[2]), b2, acc[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_permute_ps(q, 0xFF), b3, acc[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(c + i * ldc, acc[i]);
}
#endif

// One block of exactly `rows` (<= R) rows.
template <int NB, int R, int A_ROW>
void gemm_tail(int rows, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_k, const float* b,
               std::ptrdiff_t ldb, int K, float* c, std::ptrdiff_t ldc, bool accumulate) {
  if constexpr (R > 0) {
#if defined(__AVX512F__)
    if constexpr (R == 16 && NB == 1 && A_ROW == 16 && kRows1 == 16) {
      if (rows == 16 && a_k == 1 && K % 4 == 0)
        return gemm_block_16x16_k4(a, b, ldb, K, c, ldc, accumulate);
    }
#endif
    if (rows == R) return gemm_block<R, NB, A_ROW>(a, a_row, a_k, b, ldb, K, c, ldc, accumulate);
    gemm_tail<NB, R - 1, A_ROW>(rows, a, a_row, a_k, b, ldb, K, c, ldc, accumulate);
  }
}

// C[rows][cols] (+)= A B, A(i, k) = a[i * a_row + k * a_k], B [K][cols] (ldb), cols a multiple
// of 16. Column blocks of 32 (or 16); rows in blocks of nearly equal height, at most the tile's,
// so that no block is a short tail that reloads B for one row (49 tile rows on AVX-512: 5 blocks
// of 9 or 10 rather than 4 x 12 + 1).
template <int A_ROW>
void gemm_rows(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_k,
               const float* b, std::ptrdiff_t ldb, float* c, std::ptrdiff_t ldc, bool accumulate) {
  for (int j0 = 0; j0 < cols;) {
    const bool two = kWide && cols - j0 >= 32;
    const int most = two ? kRows2 : kRows1, blocks = (rows + most - 1) / most;
    for (int blk = 0, i0 = 0; blk < blocks; ++blk) {
      const int height = rows / blocks + (blk < rows % blocks ? 1 : 0);
      const float* ai = a + i0 * a_row;
      float* ci = c + i0 * ldc + j0;
      if (two)
        gemm_tail<2, kRows2, A_ROW>(height, ai, a_row, a_k, b + j0, ldb, K, ci, ldc, accumulate);
      else
        gemm_tail<1, kRows1, A_ROW>(height, ai, a_row, a_k, b + j0, ldb, K, ci, ldc, accumulate);
      i0 += height;
    }
    j0 += two ? 32 : 16;
  }
}

}  // namespace

// a_row fixed at compile time for the strides the layers use: 1 (weight gradients) and the
// channel counts of the CNNs (the Winograd forward and input gradient).
void panel_gemm(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_k,
                const float* b, std::ptrdiff_t ldb, float* c, std::ptrdiff_t ldc, bool accumulate) {
  switch (a_row) {
    case 1:
      return gemm_rows<1>(rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
    case 16:
      return gemm_rows<16>(rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
    case 32:
      return gemm_rows<32>(rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
    case 64:
      return gemm_rows<64>(rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
    default:
      return gemm_rows<0>(rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
  }
}

}  // namespace lbt::LBT_ISA_NS
