#!/usr/bin/env bash
# The GPU machine's whole check, one command (run there from the repository root with the
# bundle of scripts/gpu/bundle.sh carried in .gpu/), in order of what matters most, each part
# with its own time limit: machine facts, lbt doctor --device cuda, the gpu suites (ctest -L
# gpu's tests: the ops, and lbt train on the GPU beside the CPU), lbt train's throughput on the
# GPU (MLP, simple CNN, ResNet-8, each beside PyTorch eager), the default Fashion-MNIST sweep on
# the GPU, and the MLP step beside PyTorch eager and CUDA graph. STAGES (default "doctor tests
# train sweep bench") picks parts; not in the default: "profile" (the simple CNN's GPU time per
# op and per kernel, lbt's with each choice of cuDNN algorithms, and PyTorch's) and "scaling"
# (lbt scaling on the machine's CPU cores, 1 to 16 ranks). ALGOS (default "chosen fixed measured
# nondeterministic") lists the LBT_CUDNN_ALGOS values the simple CNN runs with (tests, train,
# profile), RESNET_ALGOS (default "fixed") ResNet-8's in train; FULL_TESTS=0 runs only the CNN's
# and ResNet-8's GPU-beside-CPU cases, once per value in ALGOS, and the cuDNN choices' cache
# case; NCU=0 skips the profile's ncu
# run. Logs go to $OUT (the device tool's folder) or /tmp/lbt-gpu-out; the device tool brings
# back 8 files, so pack them (OUT=/tmp/o bash check.sh; tar czf $OUT/all.tgz ...).
set -uo pipefail
out=${OUT:-/tmp/lbt-gpu-out}
stages=" ${STAGES:-doctor tests train sweep bench} "
algos_list=${ALGOS:-chosen fixed measured nondeterministic}
resnet_algos=${RESNET_ALGOS:-fixed}
mkdir -p "$out" /tmp/lbt-gpu
# (Python's tarfile where the machine has no xz binary.)
tar xJf .gpu/bundle.tar.xz -C /tmp/lbt-gpu 2>/dev/null ||
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    .gpu/bundle.tar.xz /tmp/lbt-gpu
data=$PWD/.gpu/fashion-mnist
lbt=/tmp/lbt-gpu/lbt
# cuBLAS, cuDNN and NCCL as the machine has them (CUDA's folders, or PyTorch's nvidia wheels).
libdirs=$(find /usr/local /usr/lib /opt -name 'libnccl.so.2' -o -name 'libcublasLt.so.13' \
            -o -name 'libcudnn_ops.so.9' 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
export LD_LIBRARY_PATH="/tmp/lbt-gpu/lib:${libdirs}:${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Where the machine has its own OpenMPI (an mpiexec and a libmpi.so.40 ldconfig knows), its
# launcher starts its own library rather than the bundle's Debian 4.1 copy (same soname, so the
# same ABI): the bundle's is removed. Otherwise the bundle's stays. (grep reads all of ldconfig's
# list: `grep -q` would stop at the match, and ldconfig's SIGPIPE fail the test under pipefail.)
if command -v mpiexec >/dev/null && ldconfig -p 2>/dev/null | grep 'libmpi\.so\.40 ' >/dev/null; then
  rm -f /tmp/lbt-gpu/lib/libmpi.so.40 /tmp/lbt-gpu/lib/libopen-rte.so.40 \
        /tmp/lbt-gpu/lib/libopen-pal.so.40
  mpi_note="the machine's libmpi.so.40"
else
  mpi_note="the bundle's libmpi.so.40 (Debian's OpenMPI 4.1)"
fi
# has STAGE: the stage was asked for; it also writes, into stages.txt, the seconds since the
# script started at which the stage begins (the next line's minus this one's: its time), what a
# rerun within the device's time can afford.
has() {
  [[ $stages == *" $1 "* ]] || return 1
  echo "$1 starts at ${SECONDS} s" >>"$out/stages.txt"
}
# throughput LABEL RUN_DIR: the median [range] of metrics.jsonl's samples_per_s windows (the
# first, with start-up, left out) and the whole run's.
throughput() {
  python3 - "$1" "$2" <<'PY'
import json, os, statistics, sys
label, run = sys.argv[1], sys.argv[2]
if not os.path.exists(f"{run}/summary.json"):
    sys.exit(f"{label}: no run (no {run}/summary.json; its stderr is in the .err file beside)")
s = json.load(open(f"{run}/summary.json"))
w = [json.loads(l)["samples_per_s"] for l in open(f"{run}/metrics.jsonl")][1:]
print(f"{label} {s['status']} steps {s['steps']} window median {statistics.median(w):,.0f} "
      f"[{min(w):,.0f}-{max(w):,.0f}] whole run {s['samples_per_s']:,.0f} val_acc {s.get('final_val_accuracy')}")
PY
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  grep -m1 'model name' /proc/cpuinfo; nproc; ldd --version | head -1
  command -v nvidia-cuda-mps-control || echo "no nvidia-cuda-mps-control"
  # The two-rank GPU test and the scaling stage run under this machine's mpiexec.
  if command -v mpiexec >/dev/null; then mpiexec --version 2>&1 | sed -n 1p; else echo "no mpiexec"; fi
  echo "MPI library: $mpi_note"
  ldd /tmp/lbt-gpu/lbt-cuda | grep -E 'not found|cublas|nccl|cudnn|cudart'
} 2>&1 | tee "$out/machine.txt"
if has doctor; then
  echo "== lbt doctor --device cuda"
  timeout 90 "$lbt" doctor --device cuda 2>&1 | tee "$out/doctor.txt"
fi
if has tests; then
  echo "== test_gpu_training (lbt train on the GPU beside the CPU), test_gpu (the ops)"
  if [ "${FULL_TESTS:-1}" = 1 ]; then
    LBT_MPIEXEC=$(command -v mpiexec || command -v mpirun) \
      LBT_BINARY=$lbt LBT_FMNIST_DIR=$data timeout 300 /tmp/lbt-gpu/test_gpu_training \
      --log_level=test_suite 2>&1 | tail -40 | tee "$out/test_gpu_training.txt"
    timeout 60 /tmp/lbt-gpu/test_gpu --log_level=test_suite 2>&1 | tail -8 | tee "$out/test_gpu.txt"
  fi
  for algos in $algos_list; do
    [ "${FULL_TESTS:-1}" = 1 ] && [ "$algos" = fixed ] && continue  # the full run had it
    echo "== the simple CNN and ResNet-8 beside the CPU, with LBT_CUDNN_ALGOS=$algos"
    LBT_CUDNN_ALGOS=$algos LBT_BINARY=$lbt LBT_FMNIST_DIR=$data timeout 60 \
      /tmp/lbt-gpu/test_gpu_training \
      --run_test=the_simple_cnn_on_the_gpu_follows_the_cpu,resnet8_on_the_gpu_follows_the_cpu \
      --log_level=message 2>&1 | tail -8 | tee "$out/test_gpu_training_cnn_$algos.txt"
  done
  if [ "${FULL_TESTS:-1}" != 1 ]; then  # the full run has it too
    echo "== a measured run's cuDNN choices cached and taken by a second run"
    LBT_BINARY=$lbt LBT_FMNIST_DIR=$data timeout 90 /tmp/lbt-gpu/test_gpu_training \
      --run_test=a_second_measured_run_takes_the_cached_choices_and_repeats_bit_for_bit \
      --log_level=message 2>&1 | tail -8 | tee "$out/test_gpu_training_cache.txt"
    echo "== BatchNorm statistics: a skipped or diverging step restores them, ranks share rank 0's"
    LBT_MPIEXEC=$(command -v mpiexec || command -v mpirun) \
      LBT_BINARY=$lbt LBT_FMNIST_DIR=$data timeout 120 /tmp/lbt-gpu/test_gpu_training \
      --run_test=a_diverging_or_skipped_gpu_step_leaves_batchnorm_statistics_as_they_were,two_gpu_ranks_share_rank_0s_batchnorm_statistics_so_a_resume_repeats \
      --log_level=message 2>&1 | tail -8 | tee "$out/test_gpu_training_bn.txt"
    echo "== a NaN through the GPU's ReLU and max pool"
    timeout 30 /tmp/lbt-gpu/test_gpu --run_test=a_nan_passes_the_gpu_relu_and_max_pool \
      --log_level=message 2>&1 | tail -4 | tee "$out/test_gpu_nan.txt"
  fi
fi
if has train; then
  echo "== lbt train on the GPU: 784-512-512-10, momentum SGD at LR 0.05, 3000 steps: samples/s"
  echo "   as the median of metrics.jsonl's windows of 50 steps (the first left out) and the whole run"
  for b in 128 512 2048; do
    timeout 60 "$lbt" train --config experiments/configs/fmnist_mlp.toml --quiet \
      --set model.device=cuda --set data.path="$data" --set train.target= \
      --set train.global_batch=$b --set schedule.reference_batch=$b --set train.steps=3000 \
      --set train.eval_every=3000 --set schedule.warmup=0 --set train.epochs=0 \
      --out /tmp/train_$b --overwrite >/dev/null 2>"$out/train_$b.err"
    throughput "MLP B=$b" /tmp/train_$b
  done 2>&1 | tee "$out/train.txt"
  echo "== lbt train on the GPU: cnn:simple, momentum SGD at LR 0.02, 1000 steps, with each" \
    "LBT_CUDNN_ALGOS of: $algos_list; PyTorch's eager step" |
    tee -a "$out/train.txt"
  for b in 32 128 512; do
    for algos in $algos_list; do
      LBT_CUDNN_ALGOS=$algos timeout 60 "$lbt" train --config experiments/configs/fmnist_cnn.toml \
        --quiet --set model.device=cuda --set data.path="$data" --set train.target= \
        --set train.global_batch=$b --set train.steps=1000 --set train.eval_every=1000 \
        --set schedule.warmup=0 --set train.epochs=0 --set optimizer.lr=0.02 \
        --out /tmp/train_$b --overwrite >/dev/null 2>"$out/train_cnn_${b}_$algos.err"
      throughput "CNN B=$b algorithms $algos" /tmp/train_$b
    done
  done 2>&1 | tee -a "$out/train.txt"
  timeout 60 python3 bench/reference/torch_gpu_mlp.py --model cnn --batches 32,128,512 \
    --seconds 0.5 2>&1 | tee -a "$out/train.txt"
  echo "== lbt train on the GPU: resnet:8 on Fashion-MNIST, momentum SGD at LR 0.05, 300 steps," \
    "with each LBT_CUDNN_ALGOS of: $resnet_algos; PyTorch's eager step" | tee -a "$out/train.txt"
  for b in 32 128 512; do
    for algos in $resnet_algos; do
      LBT_CUDNN_ALGOS=$algos timeout 60 "$lbt" train --config experiments/configs/fmnist_mlp.toml \
        --quiet --set model.spec=resnet:8 --set model.device=cuda --set data.path="$data" \
        --set train.target= --set train.global_batch=$b --set schedule.reference_batch=$b \
        --set train.steps=300 --set train.eval_every=300 --set schedule.warmup=0 \
        --set train.epochs=0 --set optimizer.lr=0.05 --out /tmp/train_$b --overwrite \
        >/dev/null 2>"$out/train_resnet_${b}_$algos.err"
      throughput "ResNet-8 B=$b algorithms $algos" /tmp/train_$b
    done
  done 2>&1 | tee -a "$out/train.txt"
  timeout 60 python3 bench/reference/torch_gpu_mlp.py --model resnet8 --batches 32,128,512 \
    --seconds 0.5 2>&1 | tee -a "$out/train.txt"
  echo "== one trial's fixed cost: lbt train for 1 step, start to exit" | tee -a "$out/train.txt"
  for i in 1 2; do
    t0=$(date +%s.%N)
    "$lbt" train --config experiments/configs/fmnist_mlp.toml --quiet --set model.device=cuda \
      --set data.path="$data" --set train.steps=1 --set schedule.warmup=0 --set train.target= \
      --out /tmp/one --overwrite >/dev/null 2>&1
    python3 -c "print('one step, start to exit: %.2f s' % ($(date +%s.%N) - $t0))"
  done 2>&1 | tee -a "$out/train.txt"
fi
if has sweep; then
  echo "== the default Fashion-MNIST MLP sweep on the GPU (--jobs ${JOBS:-8}, MPS=${MPS:-0})"
  # MPS (CUDA's multi-process service) lets the trials' processes share the GPU at once rather
  # than in time slices.
  if [ "${MPS:-0}" = 1 ]; then nvidia-cuda-mps-control -d && echo "MPS daemon started"; fi
  start=$(date +%s.%N)
  timeout 120 "$lbt" sweep --config experiments/configs/fmnist_mlp_sweep.toml --jobs "${JOBS:-8}" \
    --set model.device=cuda --set data.path="$data" --out /tmp/sweep >"$out/sweep.log" 2>&1
  rc=$?
  echo "sweep exit $rc in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee "$out/sweep.txt"
  tail -25 "$out/sweep.log" | tee -a "$out/sweep.txt"
  cp /tmp/sweep/sweep.csv /tmp/sweep/plots.log "$out/" 2>/dev/null
  if [ "${MPS:-0}" = 1 ]; then echo quit | nvidia-cuda-mps-control; fi
fi
if has bench; then
  echo "== MLP step: lbt vs PyTorch on this GPU"
  ROUNDS=${ROUNDS:-2} timeout 90 bash bench/run_gpu_bench.sh /tmp/lbt-gpu "${SECONDS_PER_BATCH:-0.5}" 2>&1 |
    tee "$out/gpu_bench.txt"
fi
if has profile; then
  # Where the simple CNN's step spends its GPU time at B = 512, where PyTorch's eager step is
  # faster (docs/gpu.md): each of lbt's ops timed by CUDA events (bench_gpu_layer_times) with
  # each choice of cuDNN algorithms, at B = 128 and 512; Nsight Compute's duration of each of
  # lbt's kernels over 160 launches (about 5 steps) after the first 400 (the self-check cached
  # by a first run, so those are start-up and about 10 steps; ncu may lack the counters'
  # permission in a container; on an H100 it had them and took 20 s);
  # and torch.profiler's table for PyTorch's step.
  echo "== profile: the simple CNN's ops (CUDA events) with each cuDNN algorithm choice"
  for b in 512 128; do
    for algos in $algos_list; do
      LBT_CUDNN_ALGOS=$algos timeout 60 /tmp/lbt-gpu/bench/bench_gpu_layer_times \
        --spec cnn:simple --shape 1,28,28 --batch $b --steps 20
    done
  done 2>&1 | tee "$out/layer_times.txt"
  echo "== profile: the simple CNN at B=512, lbt's kernels (ncu) and PyTorch's (torch.profiler)"
  timeout 60 "$lbt" train --config experiments/configs/fmnist_cnn.toml --quiet \
    --set model.device=cuda --set data.path="$data" --set train.steps=2 --set train.target= \
    --out /tmp/prof --overwrite >/dev/null 2>&1
  if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
    timeout 150 ncu --target-processes all --clock-control none --metrics gpu__time_duration.sum \
      --launch-skip 400 --launch-count 160 --print-summary per-kernel \
      "$lbt" train --config experiments/configs/fmnist_cnn.toml --quiet --set model.device=cuda \
      --set data.path="$data" --set train.target= --set train.global_batch=512 \
      --set train.steps=30 --set train.eval_every=1000 --set schedule.warmup=0 \
      --set train.epochs=0 --out /tmp/prof --overwrite >"$out/profile_lbt.txt" 2>&1
    echo "ncu exit $?: $out/profile_lbt.txt"
  else
    echo "no ncu run (NCU=0, or none on this machine)"
  fi
  timeout 60 python3 bench/reference/torch_gpu_mlp.py --model cnn --batches 512 --profile \
    >"$out/profile_torch.txt" 2>&1
  echo "torch.profiler exit $?: $out/profile_torch.txt"
fi
if has scaling; then
  echo "== lbt scaling on the CPU cores: MLP and simple CNN, strong and weak, 1-16 ranks"
  workers=${SCALING_WORKERS:-1,2,4,8,16}
  for model in mlp cnn; do
    for kind in strong weak; do
      timeout 150 "$lbt" scaling --config experiments/configs/fmnist_$model.toml -w "$workers" \
        --steps "${SCALING_STEPS:-60}" --repeats 1 --set data.path="$data" \
        $([ $kind = weak ] && echo --weak) --out /tmp/scaling_${model}_$kind \
        >"$out/scaling_${model}_$kind.log" 2>&1
      echo "$model $kind: exit $?"
      cp /tmp/scaling_${model}_$kind/scaling.csv "$out/scaling_${model}_$kind.csv" 2>/dev/null
      tail -8 "$out/scaling_${model}_$kind.log"
    done
  done 2>&1 | tee "$out/scaling.txt"
fi
echo "all done at ${SECONDS} s" >>"$out/stages.txt"
