// The kernels in use; see kernel_identity.hpp.
#include "core/kernel_identity.hpp"

#include "core/cpu_path.hpp"
#include "core/gemm.hpp"
#include "core/kernel_choice.hpp"

namespace lbt {

KernelIdentity kernel_identity() {
  const std::string path = cpu_path_name(cpu_path()), gemm = gemm_backend(), core = gemm_core(),
                    conv = cpu_path() == CpuPath::kAvx2
                               ? std::string(kernel_choice(KernelChoice::kConv))
                               : "lbt";
  return {"cpu path " + path + ", gemm " + gemm + (core.empty() ? "" : " (" + core + ")") +
              ", conv " + conv,
          "LBT_CPU=" + path + " LBT_GEMM=" + gemm +
              (core.empty() ? "" : " OPENBLAS_CORETYPE=" + core) + " LBT_CONV=" + conv};
}

namespace {

struct Kernels {
  std::string path, gemm, core, conv;
  bool read = false;
};

// "cpu path P, gemm G[ (CORE)], conv C"
Kernels read_kernels(const std::string& text) {
  Kernels k;
  const auto gemm_at = text.find(", gemm "), conv_at = text.find(", conv ");
  if (!text.starts_with("cpu path ") || gemm_at == std::string::npos ||
      conv_at == std::string::npos || conv_at < gemm_at)
    return k;
  k.path = text.substr(9, gemm_at - 9);
  k.gemm = text.substr(gemm_at + 7, conv_at - gemm_at - 7);
  if (const auto open = k.gemm.find(" ("); open != std::string::npos && k.gemm.ends_with(")")) {
    k.core = k.gemm.substr(open + 2, k.gemm.size() - open - 3);
    k.gemm.erase(open);
  }
  k.conv = text.substr(conv_at + 7);
  k.read = true;
  return k;
}

}  // namespace

bool same_kernels(const std::string& recorded, const std::string& now) {
  const Kernels a = read_kernels(recorded), b = read_kernels(now);
  if (!a.read || !b.read) return recorded == now;
  if (a.path != b.path || a.gemm != b.gemm) return false;
  if (!a.core.empty() && !b.core.empty() && a.core != b.core) return false;
  return a.path != "avx2" || a.conv == b.conv;
}

}  // namespace lbt
