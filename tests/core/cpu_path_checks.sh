#!/usr/bin/env bash
# The CPU path through the real binary: `lbt --version` names the path and why; LBT_CPU forces
# one, and an unknown value is an error and a hint line and exit code 2; so is a misspelt
# LBT_GEMM, LBT_CONV or LBT_CUDNN_ALGOS. With qemu-x86_64 (Debian qemu-user),
# the same binary on emulated CPUs: `-cpu max` has AVX2 + FMA and no AVX-512, `-cpu qemu64` is
# the baseline x86-64. There lbt must choose avx2 / generic, refuse LBT_CPU=avx512 in one line,
# and a build for AVX-512 (cpu_native_probe) must say so in one line instead of dying of SIGILL.
# Usage: cpu_path_checks.sh LBT CPU_NATIVE_PROBE
# Output is matched from here-strings, never `printf | grep -q`: bash's printf writes a line at a
# time, grep -q may exit after the matching line, and under pipefail printf's SIGPIPE then reads
# as no match (CI failed so on a loaded machine).
set -uo pipefail
lbt=$1 probe=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME CODE PATTERN COMMAND...: exit code CODE and a stdout+stderr line matching PATTERN;
# for CODE 2, exactly an error line and its hint line (the hint was missing until 2026-11-29).
expect() {
  local name=$1 code=$2 pattern=$3
  shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  out=$(grep -v "^qemu-x86_64: warning" <<<"$out")
  if [ "$rc" != "$code" ]; then fail "$name: exit $rc, want $code: $out"; return; fi
  if ! grep -Eq "$pattern" <<<"$out"; then fail "$name: '$out' lacks /$pattern/"; return; fi
  if [ "$code" = 2 ] && { [ "$(wc -l <<<"$out")" != 2 ] || ! grep -q "^hint: " <<<"$(sed -n 2p <<<"$out")"; }; then
    fail "$name: not an error line and a hint line: $out"; return
  fi
  echo "ok: $name: $(tail -1 <<<"$out")"
}

widest=generic
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && widest=avx2
grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo \
  && grep -qw avx512dq /proc/cpuinfo && widest=avx512
expect "widest path here" 0 "^cpu path $widest \(detected: " env -u LBT_CPU "$lbt" --version
expect "forced generic" 0 "^cpu path generic \(forced by LBT_CPU=generic; detected: " \
  env LBT_CPU=generic "$lbt" --version
expect "unknown path" 2 "^error: LBT_CPU=sse9 is not a CPU path$" \
  env LBT_CPU=sse9 "$lbt" --version

# The kernel choices (core/kernel_choice.hpp): a value each takes is used, a misspelt one refused
# at start (error and hint lines, exit 2) rather than read as the default.
expect "LBT_GEMM=openblas" 0 "^gemm openblas( [A-Za-z0-9]+ kernels)? \(set by LBT_GEMM=openblas\)$" \
  env LBT_GEMM=openblas "$lbt" --version
expect "the GEMM by default" 0 "^gemm (onednn \(LBT_GEMM=openblas runs OpenBLAS instead|openblas( [A-Za-z0-9]+ kernels)? \(oneDNN's GEMM runs on the AVX-512 path)" \
  env -u LBT_GEMM "$lbt" --version
for bad in LBT_GEMM=openbals LBT_CONV=onednn2 LBT_CUDNN_ALGOS=fast; do
  out=$(env "$bad" "$lbt" --version 2>&1); rc=$?
  if [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 2 ] &&
     sed -n 1p <<<"$out" | grep -Eq "^error: $bad is not one of its values: " &&
     sed -n 2p <<<"$out" | grep -q "^hint: set ${bad%%=*} to one of them, or unset it$"
  then echo "ok: $bad refused: $(sed -n 1p <<<"$out")"
  else fail "$bad: exit $rc: $out"; fi
done
out=$(env LBT_CUDNN_ALGOS=fast "$lbt" --version 2>&1 | sed -n 1p)
want="error: LBT_CUDNN_ALGOS=fast is not one of its values: fixed (the default), chosen, measured or nondeterministic"
if [ "$out" = "$want" ]; then echo "ok: a variable's values listed: $out"
else fail "LBT_CUDNN_ALGOS=fast: '$out', want '$want'"; fi
expect "LBT_CUDNN_ALGOS=nondeterministic taken" 0 "^cpu path " \
  env LBT_CUDNN_ALGOS=nondeterministic "$lbt" --version

if command -v qemu-x86_64 >/dev/null; then
  expect "AVX2 CPU (qemu -cpu max)" 0 "^cpu path avx2 \(detected: .*avx2 fma" \
    env -u LBT_CPU qemu-x86_64 -cpu max "$lbt" --version
  expect "AVX2 CPU refuses LBT_CPU=avx512" 2 \
    "^error: LBT_CPU=avx512: this CPU lacks avx512f avx512bw avx512dq avx512vl$" \
    env LBT_CPU=avx512 qemu-x86_64 -cpu max "$lbt" --version
  expect "baseline CPU (qemu -cpu qemu64)" 0 "^cpu path generic \(detected: " \
    env -u LBT_CPU qemu-x86_64 -cpu qemu64 "$lbt" --version
  expect "baseline CPU refuses LBT_CPU=avx2" 2 "^error: LBT_CPU=avx2: this CPU lacks avx2 fma$" \
    env LBT_CPU=avx2 qemu-x86_64 -cpu qemu64 "$lbt" --version
  expect "AVX-512 build on an AVX2 CPU" 2 \
    "^error: this lbt was compiled for CPUs with .*avx512f.* \(LBT_NATIVE=ON\) and this CPU lacks avx512f" \
    env -u LBT_CPU qemu-x86_64 -cpu max "$probe"
else
  echo "skipped the emulated CPUs: no qemu-x86_64 (Debian qemu-user)"
fi
[ "$failures" = 0 ]
