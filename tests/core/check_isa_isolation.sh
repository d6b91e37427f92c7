#!/usr/bin/env bash
# Every instruction beyond the baseline x86-64 in a binary must sit in a per-ISA copy of the
# kernels (cmake/isa_sources.cmake): a function using a VEX/EVEX instruction (mnemonic v...) or
# a ymm register must be in an isa_avx2/isa_avx512 (or vec_avx2/vec_avx512) namespace, one
# using zmm or mask registers in an AVX-512 one. Anything else would run on every CPU, so the
# linker merging an AVX-512 copy of an inline function or template into shared code shows here
# rather than as SIGILL on an AVX2 machine. Usage: check_isa_isolation.sh BINARY...
set -euo pipefail
status=0
for binary in "$@"; do
  bad=$(objdump -d --no-show-raw-insn -C "$binary" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; reported = 0; next }
    /^ +[0-9a-f]+:\t/ {
      split($0, parts, "\t"); insn = parts[2]
      wide = insn ~ /^v/ || insn ~ /%ymm/
      avx512 = insn ~ /%zmm|%k[0-7]/
      if (reported) next
      if (avx512 && fn !~ /isa_avx512|vec_avx512/) { print "AVX-512 outside its copy: " fn " :: " insn; reported = 1 }
      else if (wide && fn !~ /isa_avx2|isa_avx512|vec_avx2|vec_avx512/) { print "AVX outside the ISA copies: " fn " :: " insn; reported = 1 }
    }')
  if [ -n "$bad" ]; then
    echo "$binary:"
    head -20 <<<"$bad"
    echo "($(echo "$bad" | wc -l) functions)"
    status=1
  else
    echo "$binary: every AVX/AVX-512 instruction is inside its ISA's copy of the kernels"
  fi
done
exit $status
