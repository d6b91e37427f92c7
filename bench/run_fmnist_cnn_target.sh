#!/usr/bin/env bash
# Steps and wall time for Shallue et al. 2018's simple CNN to reach their Fashion-MNIST target
# (validation error below 10%) with experiments/configs/fmnist_cnn.toml. Too slow for an
# end-to-end test on 2 cores, so it is a benchmark: prints the run's summary.json.
#   usage: bash bench/run_fmnist_cnn_target.sh [build dir] [extra --set options...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
out=$(mktemp -d)
env -u OPENBLAS_CORETYPE "$build/cli/lbt" train --config experiments/configs/fmnist_cnn.toml \
  --set train.stop_at_target=true --out "$out/run" --overwrite "$@"
cat "$out/run/summary.json"
rm -rf "$out"
