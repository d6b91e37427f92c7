#!/usr/bin/env bash
# Two builds of lbt's MLP step (a change on vs off: the build before it and the build after)
# beside PyTorch at its best configuration, interleaved by bench/side_by_side.py; on the CPU's
# own path, then on the AVX2 path forced on both (LBT_CPU=avx2, OpenBLAS's Haswell kernels)
# beside PyTorch held to AVX2 (bench/reference/torch_env.sh, TORCH_ISA=avx2).
#   usage: bash bench/run_mlp_compare.sh BEFORE_BUILD AFTER_BUILD
#   env:   BATCHES (32,128,512,2048), ROUNDS (3), THREADS (2), PATHS ("native avx2")
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")/bench/bench_mlp_step
after=$(realpath "$2")/bench/bench_mlp_step
batches=${BATCHES:-32,128,512,2048}
for path in ${PATHS:-native avx2}; do
  # lbt_env after torch_env.sh, which sets its own (it undid LBT_CPU=avx2 here: the AVX2 rows
  # of 2026-11-26/27 ran lbt's AVX-512 path; 2026-11-30 audit).
  if [[ $path == avx2 ]]; then
    TORCH_ISA=avx2 source bench/reference/torch_env.sh
    lbt_env="env LBT_CPU=avx2 OPENBLAS_CORETYPE=Haswell"
    torch_label=torch_best_avx2
  else
    source bench/reference/torch_env.sh
    lbt_env="env -u OPENBLAS_CORETYPE"
    torch_label=torch_best
  fi
  echo "== $path path"
  /usr/bin/python3 bench/side_by_side.py --impl after "$lbt_env $after" \
    --impl before "$lbt_env $before" \
    --impl "$torch_label" "$torch_best bench/reference/torch_mlp.py --label $torch_label" \
    --batches "$batches" --threads "${THREADS:-2}" --seconds 1 --rounds "${ROUNDS:-3}"
done
