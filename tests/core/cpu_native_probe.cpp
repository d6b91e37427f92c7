// A stand-in for an LBT_NATIVE build: core/cpu_path.cpp compiled with LBT_BUILT_FOR naming
// AVX-512 features, as -march=native on an AVX-512 machine would. On a CPU without them it must
// stop before main with one line and exit code 2 (tests/core/cpu_path_checks.sh); elsewhere it
// prints the path report.
#include <cstdio>

#include "core/cpu_path.hpp"

int main() {
  std::printf("%s\n", lbt::cpu_path_report().c_str());
  return 0;
}
