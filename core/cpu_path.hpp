// Which compiled copy of the hot kernels runs. The kernels (core/panel_gemm, nn/cpu's
// convolutions, channels-last copies) are compiled once per x86 ISA with register tiles sized
// for its register file: AVX-512 (32 zmm), AVX2 + FMA (16 ymm) and a generic copy (baseline
// x86-64, or any other CPU). One is chosen before main from the CPU's features, or forced with
// LBT_CPU=avx512|avx2|generic; an unknown value or a path the CPU lacks ends the program there
// with a one-line error and exit code 2 (cpu_path.cpp), or in Python makes `import lbt` raise.
#pragma once
#include <string>
#include <vector>

namespace lbt {

enum class CpuPath { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };

const char* cpu_path_name(CpuPath path);

// The paths this build compiled that this CPU can run, narrowest first.
std::vector<CpuPath> available_cpu_paths();

namespace detail {
extern CpuPath g_cpu_path;  // set before main; changed only by ScopedCpuPath
}

// The path the kernels take.
inline CpuPath cpu_path() {
  return detail::g_cpu_path;
}

// Why LBT_CPU (or an LBT_NATIVE build) was refused in a Python process, which the refusal did
// not end: `import lbt` raises it (python/lbt_module.cpp). "" where nothing was refused.
std::string cpu_path_refusal();

// "cpu path avx512 (detected: avx512f avx512bw ...)" or "... (forced by LBT_CPU=avx2; ...)".
std::string cpu_path_report();

// Runs the kernels on `path` while it lives (tests comparing every path; single-threaded
// callers only). Throws std::invalid_argument for a path that is not available.
class ScopedCpuPath {
 public:
  explicit ScopedCpuPath(CpuPath path);
  ~ScopedCpuPath();
  ScopedCpuPath(const ScopedCpuPath&) = delete;
  ScopedCpuPath& operator=(const ScopedCpuPath&) = delete;

 private:
  CpuPath previous_;
};

}  // namespace lbt
