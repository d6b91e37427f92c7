#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds lbt and runs the main job:
# train the default MLP on Fashion-MNIST and print where the run directory is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
unset OPENBLAS_CORETYPE  # see scripts/test.sh
./build/cli/lbt train --config experiments/configs/fmnist_mlp.toml "$@"
