#!/usr/bin/env bash
# Packs what the GPU machine runs (scripts/gpu/check.sh) into .gpu/bundle.tar.xz: lbt, lbt-cuda,
# lbt-doctor, the gpu suites, bench_gpu_mlp_step and bench_gpu_layer_times from a CUDA build
# here (and Fashion-MNIST into .gpu/fashion-mnist, which the machine lacks), with the shared
# libraries they need that a bare CUDA image lacks (OpenBLAS, toml++, OpenMPI, Boost.Test,
# cudart). cuBLAS, cuDNN and NCCL are the GPU machine's own (hundreds of MB, and matched to its
# driver); so are glibc and libstdc++, newer there than here. Nothing can be installed there.
#   usage: bash scripts/gpu/bundle.sh [build dir]   (then: device run with carry .gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
stage=$(mktemp -d)
mkdir -p "$stage/lib" "$stage/bench" .gpu
cp "$build/cli/lbt" "$build/cli/lbt-cuda" "$build/cli/lbt-doctor" "$build/tests/gpu/test_gpu" \
   "$build/tests/gpu/test_gpu_training" "$stage/"
cp "$build/bench/bench_gpu_mlp_step" "$build/bench/bench_gpu_layer_times" "$stage/bench/"
for exe in "$stage/lbt-cuda" "$stage/lbt-doctor" "$stage/test_gpu" "$stage/test_gpu_training" \
           "$stage/bench/bench_gpu_mlp_step" "$stage/bench/bench_gpu_layer_times"; do
  ldd "$exe" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libgcc_s.so*|libstdc++.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    libcublas*|libnccl*|libcudnn*) ;;  # the machine's own, matching its driver and sub-libraries
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
# xz, not gzip: oneDNN's library alone is 38 MB, and the device tool carries 64 MiB in all
# (the tree, this bundle and Fashion-MNIST): gzip's 33 MB bundle no longer fits, xz's 17 MB does.
rm -f .gpu/bundle.tar.gz
XZ_OPT=-T2 tar cJf .gpu/bundle.tar.xz -C "$stage" .
mkdir -p .gpu/fashion-mnist
cp /usr/share/datasets/fashion-mnist/*.gz .gpu/fashion-mnist/
rm -rf "$stage"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
ls -la .gpu/bundle.tar.xz
