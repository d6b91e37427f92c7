// The kernels a run records (checkpoints, summaries) and when a resume or a kept trial counts
// as on the same ones (core/kernel_identity.hpp).
#include <boost/test/unit_test.hpp>

#include <string>

#include "core/gemm.hpp"
#include "core/kernel_identity.hpp"

using lbt::same_kernels;

BOOST_AUTO_TEST_SUITE(kernel_identity)

// OpenBLAS's own kernels count (LBT_CPU=avx2 on an AVX-512 CPU kept its AVX-512 ones, and a
// resume under OPENBLAS_CORETYPE=Haswell passed the check and differed by 2e-8); a record from
// before the core was written matches any; LBT_CONV counts on the AVX2 path alone, the one
// where oneDNN takes convolutions (it refused resumes elsewhere for nothing: 2026-11-30 audit).
BOOST_AUTO_TEST_CASE(openblas_cores_count_and_a_conv_choice_counts_on_the_avx2_path_alone) {
  const std::string haswell = "cpu path avx2, gemm openblas (Haswell), conv onednn";
  BOOST_TEST(same_kernels(haswell, haswell));
  BOOST_TEST(!same_kernels(haswell, "cpu path avx2, gemm openblas (Cooperlake), conv onednn"));
  BOOST_TEST(same_kernels("cpu path avx2, gemm openblas, conv onednn", haswell));
  BOOST_TEST(!same_kernels("cpu path avx2, gemm openblas (Haswell), conv lbt", haswell));
  BOOST_TEST(same_kernels("cpu path avx512, gemm onednn, conv onednn",
                          "cpu path avx512, gemm onednn, conv lbt"));
  BOOST_TEST(!same_kernels("cpu path avx512, gemm onednn, conv lbt",
                           "cpu path generic, gemm onednn, conv lbt"));
  BOOST_TEST(!same_kernels("cpu path avx512, gemm onednn, conv lbt",
                           "cpu path avx512, gemm openblas (Cooperlake), conv lbt"));
  BOOST_TEST(same_kernels("something else", "something else"));
  // This process's own identity names OpenBLAS's core wherever its GEMMs are OpenBLAS's.
  const std::string now = lbt::kernel_identity().text;
  BOOST_TEST(same_kernels(now, now));
  if (!lbt::gemm_core().empty())
    BOOST_TEST(now.find("(" + lbt::gemm_core() + ")") != std::string::npos, now);
}

BOOST_AUTO_TEST_SUITE_END()
