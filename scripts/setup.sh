#!/usr/bin/env bash
# Installs everything lbt needs from Debian's packages and builds it into build/.
# Safe to re-run: apt-get is skipped when every package is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libboost-test-dev libopenmpi-dev openmpi-bin zlib1g-dev
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev
  libopenblas-dev libopenblas0-openmp
  libdnnl-dev  # oneDNN's GEMM on the AVX-512 path (core/gemm.cpp)
  dataset-fashion-mnist
  python3-matplotlib python3-pandas python3-numpy jupyter-nbconvert python3-ipykernel
  pybind11-dev python3-dev python3-scipy
  python3-torch  # the outside reference: optimizer goldens, the PyTorch example
  qemu-user  # tests/core/cpu_path_checks.sh: the binary on emulated AVX2 and baseline CPUs
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_type=${LBT_BUILD_TYPE:-Release}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" ${LBT_CMAKE_ARGS:-}
fi
cmake --build build -j"$(nproc)"
