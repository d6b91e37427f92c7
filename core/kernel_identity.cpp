// The kernels in use; see kernel_identity.hpp.
#include "core/kernel_identity.hpp"

#include "core/cpu_path.hpp"
#include "core/gemm.hpp"
#include "core/kernel_choice.hpp"

namespace lbt {

KernelIdentity kernel_identity() {
  const std::string path = cpu_path_name(cpu_path()), gemm = gemm_backend(),
                    conv(kernel_choice(KernelChoice::kConv));
  return {"cpu path " + path + ", gemm " + gemm + ", conv " + conv,
          "LBT_CPU=" + path + " LBT_GEMM=" + gemm + " LBT_CONV=" + conv};
}

}  // namespace lbt
