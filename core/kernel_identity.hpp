// The CPU kernels this process computes with (LBT_CPU's path, LBT_GEMM's and LBT_CONV's
// choices), as checkpoints and summaries record them: each sums in its own order, so a run
// resumed on other kernels no longer continues bit for bit.
#pragma once
#include <string>

namespace lbt {

struct KernelIdentity {
  std::string text;         // "cpu path avx512, gemm onednn, conv onednn"
  std::string environment;  // "LBT_CPU=avx512 LBT_GEMM=onednn LBT_CONV=onednn": how to ask for them
};

KernelIdentity kernel_identity();

}  // namespace lbt
