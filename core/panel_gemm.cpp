// panel_gemm on the CPU path in use; the kernels are in panel_gemm_isa.cpp, one copy per ISA.
#include "core/panel_gemm.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt {

#define LBT_DECLARE(NS)                                                                         \
  namespace NS {                                                                                \
  void panel_gemm(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row,              \
                  std::ptrdiff_t a_k, const float* b, std::ptrdiff_t ldb, float* c,             \
                  std::ptrdiff_t ldc, bool accumulate);                                          \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

void panel_gemm(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_k,
                const float* b, std::ptrdiff_t ldb, float* c, std::ptrdiff_t ldc, bool accumulate) {
  LBT_CPU_DISPATCH(panel_gemm, rows, cols, K, a, a_row, a_k, b, ldb, c, ldc, accumulate);
}

}  // namespace lbt
