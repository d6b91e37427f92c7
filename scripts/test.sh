#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds lbt and runs the whole test suite:
# every CTest test of the Release build, then the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/). Pass ctest arguments to filter: -L unit, -R optim.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The machine image presets OPENBLAS_CORETYPE=Haswell, which disables OpenBLAS's AVX-512
# kernels; let OpenBLAS detect the CPU instead.
unset OPENBLAS_CORETYPE
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure -j1 "$@"

if [ "${LBT_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  [ -f build-asan/CMakeCache.txt ] || cmake -S . -B build-asan "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLBT_SANITIZE=ON -DLBT_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$(nproc)"
  # OpenMP's and OpenBLAS's thread pools keep allocations until exit: not leaks of ours.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j1 -L unit
fi
