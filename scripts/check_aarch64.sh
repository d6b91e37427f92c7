#!/usr/bin/env bash
# Checks lbt on 64-bit ARM from an x86-64 Debian machine: cross-builds the libraries and the
# unit-test programs with Debian's g++-aarch64-linux-gnu into build-aarch64/ (the libraries
# they link from Debian's arm64 packages; toolchain file cmake/aarch64-linux-gnu.cmake) and runs
# them under qemu-user through CTest: `ctest -L unit`, less the two checks that run on the host
# (layering, docs_paths). Prints one summary line and exits 1 if a test failed.
#
# Not part of scripts/test.sh: on the 2-core CI machine the cross build and the emulated tests
# take longer than CI's remaining time (docs/development.md, "aarch64": how long it took and
# what it found). Run it by hand after changing kernels or anything CPU-specific.
#
#   bash scripts/check_aarch64.sh            # everything; safe to re-run (incremental)
#   bash scripts/check_aarch64.sh -R test_nn # extra arguments go to ctest
#
# Installs what is missing with apt-get: the cross compiler, qemu-user, and the arm64 packages
# of zlib, Boost.Test and toml++ (after `dpkg --add-architecture arm64`; apt may then bring
# the host's copies of multiarch libraries to the same version). OpenBLAS, MPI, CUDA, Python
# and the benchmarks are left out; Eigen, nlohmann-json and CLI11 are header-only and shared
# with the host. LBT_AARCH64_JOBS sets the build's parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-aarch64
jobs=${LBT_AARCH64_JOBS:-$(nproc)}

timings=()
phase_start=$SECONDS
phase_done() {  # phase_done NAME: records the time since the previous phase ended
  timings+=("$1 $((SECONDS - phase_start)) s")
  phase_start=$SECONDS
}

# ---- packages ----
host_packages=(cmake ninja-build pkg-config g++-aarch64-linux-gnu qemu-user
               libeigen3-dev nlohmann-json3-dev libcli11-dev)
arm64_packages=(zlib1g-dev:arm64 libboost-test-dev:arm64 libtomlplusplus-dev:arm64)
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
added_arch=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "check_aarch64: dpkg --add-architecture arm64"
  $sudo_cmd dpkg --add-architecture arm64
  added_arch=1
fi
missing=()
for p in "${host_packages[@]}" "${arm64_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $added_arch = 1 ]; then
  echo "check_aarch64: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"
  fi
fi
phase_done packages

# ---- configure ----
if [ ! -f $build/CMakeCache.txt ]; then
  # MPI and pybind11 are not looked for at all: the host's would be found, for x86-64.
  cmake -S . -B $build -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
    -DCMAKE_BUILD_TYPE=Release -DLBT_WITH_OPENBLAS=OFF -DLBT_WITH_DNNL=OFF -DLBT_WITH_MPI=OFF \
    -DLBT_WITH_CUDA=OFF \
    -DLBT_WITH_PYTHON=OFF -DLBT_BUILD_BENCH=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON >/dev/null
fi
phase_done configure

# ---- build: the libraries and what `ctest -L unit` runs ----
cmake --build $build -j"$jobs" --target unit_tests
phase_done build

# ---- tests, each program under qemu-aarch64 (the toolchain's CMAKE_CROSSCOMPILING_EMULATOR) ----
log=$build/check_aarch64.log
status=0
ctest --test-dir $build --output-on-failure -j1 -L unit -E '^(layering|docs_paths)$' "$@" \
  2>&1 | tee "$log" || status=1
phase_done tests

total=$(sed -nE 's/.* tests? failed out of ([0-9]+).*/\1/p' "$log" | tail -1)
failed=$(sed -nE 's/.* ([0-9]+) tests? failed out of.*/\1/p' "$log" | tail -1)
skipped=$(grep -cE '\*\*\*(Skipped|Not Run)' "$log" || true)
total=${total:-0} failed=${failed:-0}
# ctest counts a skipped test as passed.
passed=$((total - failed - skipped))
[ "$total" -gt 0 ] || status=1
[ "$failed" -eq 0 ] || status=1
timing_line=$(IFS=,; echo "${timings[*]}" | sed 's/,/, /g')
echo "check_aarch64: $passed passed, $failed failed, $skipped skipped of $total tests" \
     "(aarch64 under qemu-aarch64); time: $timing_line; total $SECONDS s"
exit $status
