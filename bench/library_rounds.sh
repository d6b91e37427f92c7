# Sourced by run_gemm_libraries.sh and run_conv_libraries.sh: ROUNDS interleaved rounds of a
# library benchmark, on the CPU's own paths and then with every library held to AVX2
# (LBT_CPU=avx2, OPENBLAS_CORETYPE=Haswell, ONEDNN_MAX_CPU_ISA=AVX2); its CSV rows, header
# dropped, prefixed "ISA,ROUND," and appended to ROWS_FILE.
#   library_rounds BINARY DEFAULT_BATCHES ROWS_FILE   env: ROUNDS (2), BATCHES, THREADS (2)
library_rounds() {
  local binary=$1 batches=${BATCHES:-$2} rows=$3 round
  for round in $(seq 1 "${ROUNDS:-2}"); do
    env -u LBT_CPU -u OPENBLAS_CORETYPE -u ONEDNN_MAX_CPU_ISA "$binary" --batches "$batches" \
      --threads "${THREADS:-2}" | sed "1d;s/^/native,$round,/" >>"$rows"
    env LBT_CPU=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2 "$binary" \
      --batches "$batches" --threads "${THREADS:-2}" | sed "1d;s/^/avx2,$round,/" >>"$rows"
  done
}
