#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ AddressSanitizer, UndefinedBehaviorSanitizer) in
# build-fuzz/ and runs each for SECONDS (default 600), growing tests/fuzz/corpus/<target>.
# Crashes land in build-fuzz/crashes/<target>/: copy them into the corpus as regressions.
#   usage: bash tests/fuzz/run.sh [seconds] [target ...]   (targets: idx cifar10 npy csv config checkpoint)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(idx cifar10 npy csv config checkpoint)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLBT_FUZZ=ON -DLBT_SANITIZE=ON -DLBT_WITH_MPI=OFF -DLBT_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz --target $(printf 'fuzz_%s ' "${targets[@]}")
for t in "${targets[@]}"; do
  mkdir -p "tests/fuzz/corpus/$t" "build-fuzz/crashes/$t"
  echo "== fuzz_$t for ${seconds}s"
  env -u OPENBLAS_CORETYPE "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix="build-fuzz/crashes/$t/" "tests/fuzz/corpus/$t" 2>&1 |
    grep -E "^#[0-9]+[[:space:]]+(DONE|INITED)|ERROR|SUMMARY|crash-|timeout-|leak-" || true
done
