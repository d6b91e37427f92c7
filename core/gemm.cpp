// GEMM dispatch; see gemm.hpp.
#include "core/gemm.hpp"

#include <omp.h>

#include "core/tensor.hpp"

#ifdef LBT_HAVE_OPENBLAS
extern "C" {
// The few CBLAS entry points we need, declared here so no cblas.h variant is required.
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc);
void openblas_set_num_threads(int threads);
}
#endif

namespace lbt {

void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
#ifdef LBT_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
  using Stride = Eigen::OuterStride<>;
  using CMap = Eigen::Map<const MatrixRM, 0, Stride>;
  Eigen::Map<MatrixRM, 0, Stride> C(c, m, n, Stride(ldc));
  CMap A(a, trans_a ? k : m, trans_a ? m : k, Stride(lda));
  CMap B(b, trans_b ? n : k, trans_b ? k : n, Stride(ldb));
  if (beta == 0.0f) C.setZero();
  else if (beta != 1.0f) C *= beta;
  if (!trans_a && !trans_b) C.noalias() += alpha * A * B;
  else if (trans_a && !trans_b) C.noalias() += alpha * A.transpose() * B;
  else if (!trans_a && trans_b) C.noalias() += alpha * A * B.transpose();
  else C.noalias() += alpha * A.transpose() * B.transpose();
#endif
}

void set_num_threads(int threads) {
  if (threads < 1) threads = 1;
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
#ifdef LBT_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
}

int num_threads() { return omp_get_max_threads(); }

const char* gemm_backend() {
#ifdef LBT_HAVE_OPENBLAS
  return "openblas";
#else
  return "eigen";
#endif
}

}  // namespace lbt
