// What a layer is asked for, whatever backend computes it: the options the model builder passes
// to Backend's layer factories (nn/backend.hpp).
#pragma once
#include <cstdint>

namespace lbt::nn {

enum class InitScheme { kHe, kGlorot, kZero };

struct Conv2dOptions {
  std::int64_t out_channels = 0, kernel = 3, stride = 1, padding = 0;
  bool bias = true;            // off before BatchNorm, whose shift makes a bias redundant
  bool allow_direct = true;    // CPU: false always runs im2col + GEMM (tests compare the paths)
  bool allow_winograd = true;  // CPU: false takes the direct path where Winograd's would apply
  bool allow_library = true;   // CPU: false keeps lbt's kernels where oneDNN's would run (tests)
};

struct BatchNormOptions {
  double momentum = 0.1;
  double eps = 1e-5;
  // y = max(bn(x), 0): BatchNorm and the ReLU after it as one layer, one pass each way. The
  // backward recomputes the ReLU's mask from x, so the separate ReLU's passes over its input
  // and gradient (5 of a tensor's size) go away.
  bool relu = false;
};

}  // namespace lbt::nn
