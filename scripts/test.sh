#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds lbt and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The machine image presets OPENBLAS_CORETYPE=Haswell, which disables OpenBLAS's AVX-512
# kernels; let OpenBLAS detect the CPU instead.
unset OPENBLAS_CORETYPE
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure -j1 "$@"
