// Single-precision GEMM on row-major matrices: C = alpha * op(A) * op(B) + beta * C.
// Hands the product to OpenBLAS when built with it (faster on this machine's AVX-512 than
// Eigen's own kernel, shared/BENCHMARKING.md), else to Eigen. Threads: set_num_threads.
#pragma once
#include <string>

namespace lbt {

// Below this many flops (2mnk) a product runs on the calling thread alone. Waking the team and
// joining it costs 1-2 us on idle cores, more than splitting a product this small saves; with
// another process on the other core each join waits out a scheduler time slice (a linear 16-1
// model at batch 8 trained 30x slower beside a second 2-thread lbt before this bound).
inline constexpr double kSplitAboveFlops = 1 << 18;

// op(A): [m, k], op(B): [k, n], C: [m, n]; lda/ldb/ldc are row strides of the stored matrices.
void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);

// Threads used by GEMM and by lbt's own OpenMP loops.
void set_num_threads(int threads);
int num_threads();
const char* gemm_backend();
// The kernels OpenBLAS chose for this CPU ("Haswell", "Cooperlake"; OPENBLAS_CORETYPE sets
// them), which LBT_CPU does not: "" where GEMMs are not OpenBLAS's.
std::string gemm_core();

}  // namespace lbt
