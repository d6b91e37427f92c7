// Calling the copy of a kernel for the CPU path in use (core/cpu_path.hpp). A kernel file
// compiled once per ISA (CMake's lbt_add_isa_sources) defines its functions in namespace
// LBT_ISA_NS: isa_generic, isa_avx2 or isa_avx512. Its dispatching file declares them in each
// with LBT_FOR_EACH_ISA and forwards each public function with LBT_CPU_DISPATCH, written as a
// statement (`LBT_CPU_DISPATCH(fn, a, b);`: without the semicolon clang-format takes the
// function for a declaration and breaks its layout).
#pragma once
#include "core/cpu_path.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#define LBT_FOR_EACH_ISA(X) X(isa_generic) X(isa_avx2) X(isa_avx512)
#define LBT_CPU_DISPATCH(FN, ...)                                 \
  switch (::lbt::cpu_path()) {                                    \
    case ::lbt::CpuPath::kAvx512: return isa_avx512::FN(__VA_ARGS__); \
    case ::lbt::CpuPath::kAvx2: return isa_avx2::FN(__VA_ARGS__);     \
    default: return isa_generic::FN(__VA_ARGS__);                 \
  }
#else
#define LBT_FOR_EACH_ISA(X) X(isa_generic)
#define LBT_CPU_DISPATCH(FN, ...) return isa_generic::FN(__VA_ARGS__);
#endif
