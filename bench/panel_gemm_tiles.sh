#!/usr/bin/env bash
# Compiles core/panel_gemm_isa.cpp with each candidate register tile for each ISA into
# bench/panel_gemm_tiles.cpp and prints one CSV row per tile and product: GFLOP/s of the hand
# kernel and of single-threaded OpenBLAS, median min max of 7 rounds. OpenBLAS runs its own
# kernels for this CPU; OPENBLAS_CORETYPE=Haswell makes it take its AVX2 ones, for the AVX2 rows.
# Usage (on a quiet machine: flock /work/lbt-cpu.lock bash bench/panel_gemm_tiles.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
# isa flags tiles ("rows-of-2-vectors rows-of-1-vector wide") ...
run() {
  local isa=$1 flags=$2 coretype=$3
  shift 3
  for tile in "$@"; do
    read -r r2 r1 wide <<<"$tile"
    local name="$isa ${wide/1/2x}${r2}/${r1}x1"
    [ "$wide" = 0 ] && name="$isa ${r1}x1"
    g++ -std=c++20 -O3 -fopenmp -I. $flags -DLBT_ISA_NS=isa_$isa -DLBT_PANEL_TILE_ROWS2="$r2" \
      -DLBT_PANEL_TILE_ROWS1="$r1" -DLBT_PANEL_TILE_WIDE="$wide" -DLBT_TILE_NAME="\"$name\"" \
      bench/panel_gemm_tiles.cpp core/panel_gemm_isa.cpp "$blas" -o "$out/t"
    if [ -n "$coretype" ]; then
      OPENBLAS_CORETYPE=$coretype OMP_NUM_THREADS=1 "$out/t"
    else
      env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=1 "$out/t"
    fi
  done
}
echo "tile,product,rows,cols,K,hand_gflops,hand_min,hand_max,openblas_gflops,openblas_min,openblas_max"
# ISAS: which ISAs to measure (default all three; avx512 only where the CPU has it).
isas=${ISAS:-avx512 avx2 generic}
avx512="-mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma"
if [[ $isas == *avx512* ]] && grep -qw avx512f /proc/cpuinfo; then
  run avx512 "$avx512" "" "12 16 1" "8 16 1" "12 12 1" "6 12 0"
fi
if [[ $isas == *avx2* ]]; then
  run avx2 "-mavx2 -mfma" Haswell "3 6 0" "3 4 0" "3 5 0" "2 6 1" "3 6 1"
fi
if [[ $isas == *generic* ]]; then
  run generic "" "" "1 3 0" "1 2 0" "1 4 0"
fi
rm -rf "$out"
