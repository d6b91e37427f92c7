#!/usr/bin/env bash
# The GPU machine's whole check, one command (run there from the repository root with the
# bundle of scripts/gpu/bundle.sh carried in .gpu/): machine facts, lbt doctor --device cuda,
# the gpu test suite, and the MLP step beside PyTorch eager and CUDA graph (LBT_GPU_BENCH=0
# skips it). Writes its logs to
# $OUT (the device tool's folder) or /tmp/lbt-gpu-out.
set -uo pipefail
out=${OUT:-/tmp/lbt-gpu-out}
mkdir -p "$out" /tmp/lbt-gpu
tar xzf .gpu/bundle.tar.gz -C /tmp/lbt-gpu
# cuBLAS, cuDNN and NCCL as the machine has them (CUDA's folders, or PyTorch's nvidia wheels).
libdirs=$(find /usr/local /usr/lib /opt -name 'libnccl.so.2' -o -name 'libcublasLt.so.13' \
            -o -name 'libcudnn_ops.so.9' 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
export LD_LIBRARY_PATH="/tmp/lbt-gpu/lib:${libdirs}:${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  grep -m1 'model name' /proc/cpuinfo; nproc; ldd --version | head -1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd /tmp/lbt-gpu/lbt | grep -E 'not found|cublas|nccl|cudnn|cudart'
} 2>&1 | tee "$out/machine.txt"
echo "== lbt doctor --device cuda"
timeout 120 /tmp/lbt-gpu/lbt doctor --device cuda 2>&1 | tee "$out/doctor.txt"
echo "== test_gpu (ctest -L gpu's suite)"
timeout 180 /tmp/lbt-gpu/test_gpu --log_level=test_suite 2>&1 | tail -30 | tee "$out/test_gpu.txt"
[ "${LBT_GPU_BENCH:-1}" = 1 ] || exit 0
echo "== MLP step: lbt vs PyTorch on this GPU"
ROUNDS=${ROUNDS:-3} timeout 300 bash bench/run_gpu_bench.sh /tmp/lbt-gpu "${SECONDS_PER_BATCH:-1}" 2>&1 |
  tee "$out/gpu_bench.txt"
