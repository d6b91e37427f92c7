# The two PyTorch configurations lbt is compared with (shared/BENCHMARKING.md), as command
# prefixes for the reference scripts; sourced by bench/run_*_bench.sh.
# Default: the machine's environment as it is.
torch_default="/usr/bin/python3"
# Best: OpenBLAS detects the CPU (the image presets OPENBLAS_CORETYPE=Haswell, which turns off
# its AVX-512 kernels), the OpenMP OpenBLAS build, and a malloc that keeps freed memory.
torch_best="env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp"
torch_best+=" GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
torch_best+=" /usr/bin/python3"
