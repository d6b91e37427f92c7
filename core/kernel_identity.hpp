// The CPU kernels this process computes with (LBT_CPU's path, LBT_GEMM's and LBT_CONV's
// choices), as checkpoints and summaries record them: each sums in its own order, so a run
// resumed on other kernels no longer continues bit for bit.
#pragma once
#include <string>

namespace lbt {

struct KernelIdentity {
  std::string text;         // "cpu path avx2, gemm openblas (Haswell), conv onednn"
  std::string environment;  // "LBT_CPU=avx2 LBT_GEMM=openblas OPENBLAS_CORETYPE=Haswell ...": how
                            // to ask for them
};

// OpenBLAS's kernels are its own choice (LBT_CPU=avx2 on an AVX-512 CPU kept its AVX-512 ones:
// a resume there passed the check and differed by 2e-8); LBT_CONV changes a sum only on the
// AVX2 path, where oneDNN takes strided convolutions (it refused resumes elsewhere for nothing).
KernelIdentity kernel_identity();

// Whether a recorded identity's kernels are this one's: texts from before the OpenBLAS core was
// recorded match any core, and a conv choice counts on the AVX2 path alone.
bool same_kernels(const std::string& recorded, const std::string& now);

}  // namespace lbt
