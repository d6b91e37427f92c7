#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds lbt and runs the whole test suite:
# every CTest test of the Release build, then the unit tests of the libraries below the drivers
# again, the libraries under AddressSanitizer and UndefinedBehaviorSanitizer, the tests' own code
# under AddressSanitizer (build-asan/; the drivers' and the CLI's unit tests run in the Release
# build only: tests/CMakeLists.txt, LBT_DRIVER_UNIT). Pass
# ctest arguments to filter: -L unit, -R optim.
# Every stage runs even when an earlier one failed (one flaky test must not hide the sanitizer
# results); the failures are listed at the end and the script then exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
setup_seconds=$SECONDS

# Both builds and the tests' scratch directories take about 1.1 GiB (Release 0.2, build-asan
# 0.6, the largest test's runs 0.25); a full disk otherwise shows up as a failed link 15 minutes
# in. Checked after set-up, whose packages need their own space.
need_free_disk() {  # need_free_disk DIR: exits 2 unless DIR's file system has 1.5 GiB free
  local free_kib
  free_kib=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
  if ((free_kib < 1536 * 1024)); then
    echo "error: $((free_kib / 1024)) MiB free on the file system of $1; the builds and tests need 1.5 GiB: free some space (old build trees; /tmp/lbt_* left by test processes that were killed)" >&2
    exit 2
  fi
}
need_free_disk .
need_free_disk "${TMPDIR:-/tmp}"
# The machine image presets OPENBLAS_CORETYPE=Haswell, which disables OpenBLAS's AVX-512
# kernels; let OpenBLAS detect the CPU instead.
unset OPENBLAS_CORETYPE
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

failed=()
timings=()
stage() {  # stage NAME COMMAND...: runs it, records NAME if it fails, and its time
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  if ! "$@"; then failed+=("$name"); fi
  timings+=("$(printf '%5d s  %s' $((SECONDS - start)) "$name")")
}

# Two tests at a time on the 2-core machine: 387 s against 487-526 s one at a time (2026-11-26).
# The tests time nothing (speed is measured in bench/), so sharing the cores changes no result.
# Every test's OpenMP threads sleep when idle rather than spin on the core the other test needs
# (tests/ctest_env.cmake).
stage "tests (Release build)" ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"

# -O1 -g1 (line tables only), as AddressSanitizer's docs advise: on the 2-core machine the
# build took 29 minutes at -O2 -g; one heavy file compiles in 13 s instead of 22 s. Only what
# `ctest -L unit` runs is built (the unit_tests target).
sanitizer_build() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  [ -f build-asan/CMakeCache.txt ] || cmake -S . -B build-asan "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DLBT_SANITIZE=ON -DLBT_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$(nproc)" --target unit_tests
}
sanitizer_tests() {
  # OpenMP's and OpenBLAS's thread pools keep allocations until exit: not leaks of ours.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -L unit
}
if [ "${LBT_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "sanitizer build (build-asan)" sanitizer_build
  if [ -f build-asan/CMakeCache.txt ]; then
    stage "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer" sanitizer_tests
  fi
fi

echo "== time per stage (setup and Release build: $setup_seconds s)"
printf '%s\n' "${timings[@]}"
if ((${#failed[@]})); then
  echo "== FAILED stages:"
  printf '   %s\n' "${failed[@]}"
  exit 1
fi
echo "== all stages passed"
