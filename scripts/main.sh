#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds lbt and runs the main job: a
# batch-size sweep of the MLP on Fashion-MNIST (global batch 16..4096, an LR search at each),
# the critical-batch fit and its plots. Rerunning resumes: finished trials are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
unset OPENBLAS_CORETYPE  # see scripts/test.sh
./build/cli/lbt sweep --config experiments/configs/fmnist_mlp_sweep.toml --jobs 2 "$@"
