# The two PyTorch configurations lbt is compared with (shared/BENCHMARKING.md), as command
# prefixes for the reference scripts; sourced by bench/run_*_bench.sh.
# Default: the machine's environment as it is.
torch_default="/usr/bin/python3"
# Best: OpenBLAS detects the CPU (the image presets OPENBLAS_CORETYPE=Haswell, which turns off
# its AVX-512 kernels), the OpenMP OpenBLAS build, and a malloc that keeps freed memory.
torch_best="env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp"
torch_best+=" GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
torch_best+=" /usr/bin/python3"
# TORCH_ISA=avx2 on an AVX-512 machine: PyTorch's own kernels, its oneDNN and OpenBLAS held to
# AVX2, an estimate of PyTorch on an AVX2 CPU beside lbt's forced AVX2 path (LBT_CPU=avx2).
if [[ ${TORCH_ISA:-} == avx2 ]]; then
  torch_best="env ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2"
  torch_best+=" OPENBLAS_CORETYPE=Haswell LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp"
  torch_best+=" GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
  torch_best+=" /usr/bin/python3"
  torch_default="env ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 /usr/bin/python3"
fi
# lbt's prefix: OpenBLAS detects the CPU, or with LBT_CPU=avx2 takes its AVX2 (Haswell) kernels
# as it would on an AVX2 CPU, beside lbt's AVX2 kernels.
lbt_env="env -u OPENBLAS_CORETYPE"
if [[ ${LBT_CPU:-} == avx2 ]]; then
  lbt_env="env OPENBLAS_CORETYPE=Haswell"
fi
