// Kernel choices made by environment variables, so a benchmark can measure on vs off in one
// run: LBT_GEMM (onednn | openblas: oneDNN's or OpenBLAS's sgemm for the large products,
// core/gemm.cpp), LBT_CONV (onednn | lbt: oneDNN's convolutions or lbt's kernels,
// nn/cpu/conv2d_onednn.cpp), LBT_CUDNN_ALGOS (fixed | chosen | measured | nondeterministic:
// the fixed deterministic algorithms, cuDNN's deterministic ones per shape as its heuristics or
// its timing rank them, or its first per shape, nondeterministic ones included, as PyTorch takes
// them; nn/cuda/cudnn_choice.cu). LBT_CPU is core/cpu_path.hpp's, checked before main. A
// misspelt value must not quietly measure the other side twice: lbt's commands refuse one at
// start (check_kernel_choices).
#pragma once
#include <string_view>

namespace lbt {

enum class KernelChoice { kGemm, kConv, kCudnnAlgos };

// The value set in the environment where it is one the variable takes, else its default (the
// first: onednn, onednn, fixed).
std::string_view kernel_choice(KernelChoice choice);

// Throws ConfigError (exit 2) naming the first variable set to a value it does not take and
// the values it takes.
void check_kernel_choices();

}  // namespace lbt
