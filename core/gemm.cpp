// GEMM dispatch; see gemm.hpp.
#include "core/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <string>

#include "core/cpu_path.hpp"
#include "core/error.hpp"
#include "core/kernel_choice.hpp"
#include "core/tensor.hpp"

#ifdef LBT_HAVE_DNNL
#include <dnnl.h>
#endif

#ifdef LBT_HAVE_OPENBLAS
extern "C" {
// The few CBLAS entry points we need, declared here so no cblas.h variant is required.
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc);
void openblas_set_num_threads(int threads);
char* openblas_get_corename(void);
}
#endif

namespace lbt {
namespace {

// oneDNN's GEMM (dnnl_sgemm: row-major, its own OpenMP threads) on the AVX-512 path: on the
// MLP's layers it ran 1.13-1.34x OpenBLAS's at every batch there; on AVX2 the two were within
// 10% either way, so OpenBLAS stays (bench/cpu_paths.md). LBT_GEMM=openblas turns it off, for
// on-vs-off benchmarks in one run.
bool gemm_by_dnnl() {
#ifdef LBT_HAVE_DNNL
  static const bool on = [] {
    return cpu_path() == CpuPath::kAvx512 && kernel_choice(KernelChoice::kGemm) == "onednn";
  }();
  return on;
#else
  return false;
#endif
}

[[noreturn]] void throw_refused(int m, int n, int k) {
  throw Error("oneDNN's sgemm refused a " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                  std::to_string(k) + " product",
              "rerun with LBT_GEMM=openblas and report it");
}

// One product by the chosen library: with its own threads outside a parallel region, on the
// calling thread inside one. False where oneDNN refused it (thrown by the caller, outside any
// parallel region, which an exception must not leave).
bool sgemm_one(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
               int lda, const float* b, int ldb, float beta, float* c, int ldc) {
#ifdef LBT_HAVE_DNNL
  if (gemm_by_dnnl()) {
    return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc) == dnnl_success;
  }
#endif
#ifdef LBT_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
  using Stride = Eigen::OuterStride<>;
  using CMap = Eigen::Map<const MatrixRM, 0, Stride>;
  Eigen::Map<MatrixRM, 0, Stride> C(c, m, n, Stride(ldc));
  CMap A(a, trans_a ? k : m, trans_a ? m : k, Stride(lda));
  CMap B(b, trans_b ? n : k, trans_b ? k : n, Stride(ldb));
  if (beta == 0.0f)
    C.setZero();
  else if (beta != 1.0f)
    C *= beta;
  if (!trans_a && !trans_b)
    C.noalias() += alpha * A * B;
  else if (trans_a && !trans_b)
    C.noalias() += alpha * A.transpose() * B;
  else if (!trans_a && trans_b)
    C.noalias() += alpha * A * B.transpose();
  else
    C.noalias() += alpha * A.transpose() * B.transpose();
#endif
  return true;
}

// A product under kSplitAboveFlops, on the calling thread alone. oneDNN would still start its
// own threads for some (a 1024 x 1 x 16 product did, the tiny model's evaluation): it takes
// their count from omp_get_max_threads() at each call, so that is 1 for the call. OpenBLAS runs
// products this small on one thread by itself.
bool sgemm_alone(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (!gemm_by_dnnl())
    return sgemm_one(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const bool done = sgemm_one(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  omp_set_num_threads(threads);
  return done;
}

// From kSplitAboveFlops (gemm.hpp) to this many flops a product is split by hand: each OpenMP
// thread multiplies its own slice with a single-threaded call (the libraries run single-threaded
// inside a parallel region). OpenBLAS's own threading costs more than it gains on the small
// products of small-batch steps (measured: 1 thread beat 2 at batch 32 on the MLP); above 2e8 flops
// it wins. oneDNN's own partition of the MLP's products left each of 2 threads waiting 8-9% of a
// batch-128 step (perf); split by hand, the step ran 1.06-1.10x at batch 128, 1.00-1.04x at
// 512 (2e9 against 2e8) and level at 2048 and on the CNNs (bench/cpu_paths.md, 2026-11-27).
double split_below_flops() {
  return gemm_by_dnnl() ? 2.0e9 : 2.0e8;
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double flops = 2.0 * m * n * k;
  if (threads > 1 && flops < kSplitAboveFlops) {
    if (!sgemm_alone(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      throw_refused(m, n, k);
    return;
  }
  if (threads == 1 || flops >= split_below_flops()) {
    if (!sgemm_one(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      throw_refused(m, n, k);
    return;
  }
  // Split C[m, n] into `threads` slices along its larger side (columns in multiples of 16 so
  // each slice starts on a 64-byte boundary).
  const bool split_columns = n >= m;
  const int extent = split_columns ? n : m;
  const int grain = split_columns ? 16 : 1;
  const int chunk = ((extent + threads - 1) / threads + grain - 1) / grain * grain;
  bool refused = false;
#pragma omp parallel num_threads(threads) reduction(|| : refused)
  {
    const int begin = omp_get_thread_num() * chunk;
    const int size = std::min(chunk, extent - begin);
    if (size > 0) {
      if (split_columns) {
        // op(B) columns [begin, begin + size): B stored [k, n] (offset begin) or [n, k] (rows).
        const float* b_slice = trans_b ? b + static_cast<std::ptrdiff_t>(begin) * ldb : b + begin;
        refused = !sgemm_one(trans_a, trans_b, m, size, k, alpha, a, lda, b_slice, ldb, beta,
                             c + begin, ldc);
      } else {
        // op(A) rows [begin, begin + size): A stored [m, k] (rows) or [k, m] (offset begin).
        const float* a_slice = trans_a ? a + begin : a + static_cast<std::ptrdiff_t>(begin) * lda;
        refused = !sgemm_one(trans_a, trans_b, size, n, k, alpha, a_slice, lda, b, ldb, beta,
                             c + static_cast<std::ptrdiff_t>(begin) * ldc, ldc);
      }
    }
  }
  if (refused) throw_refused(m, n, k);
}

void set_num_threads(int threads) {
  if (threads < 1) threads = 1;
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
#ifdef LBT_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
}

int num_threads() {
  return omp_get_max_threads();
}

const char* gemm_backend() {
  if (gemm_by_dnnl()) return "onednn";
#ifdef LBT_HAVE_OPENBLAS
  return "openblas";
#else
  return "eigen";
#endif
}

std::string gemm_core() {
#ifdef LBT_HAVE_OPENBLAS
  if (!gemm_by_dnnl()) return openblas_get_corename();
#endif
  return "";
}

}  // namespace lbt
