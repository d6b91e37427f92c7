// CUDA runtime, cuBLAS and NCCL behind core/cuda/gpu.hpp.
#include "core/cuda/gpu.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "core/cuda/check.cuh"
#include "core/error.hpp"

namespace lbt::cuda {

namespace {

// "13.0" from CUDA's 13000.
std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Why cudaGetDeviceCount failed, in the user's terms: the runtime says "CUDA driver version is
// insufficient for CUDA runtime version" both where no driver is loaded (every CPU machine) and
// where one is too old, which call for different fixes.
std::string device_count_failure(cudaError_t e) {
  if (e != cudaErrorInsufficientDriver) return cudaGetErrorString(e);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0) return "no NVIDIA driver is loaded on this machine";
  return "the NVIDIA driver supports CUDA " + cuda_version_text(driver) +
         ", older than this build's CUDA runtime " + cuda_version_text(runtime);
}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = device_count_failure(e);
    cudaGetLastError();  // clear it: the next call must not see it
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA driver sees no device";
  return n;
}

void require_gpu() {
  std::string why;
  if (device_count(&why) == 0)
    throw ConfigError("no usable NVIDIA GPU: " + why,
                      "the CUDA parts need a machine with an NVIDIA GPU and its driver");
}

namespace {
int g_selected_device = 0;
}  // namespace

void select_device(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  g_selected_device = ordinal;
}

std::vector<std::byte> device_uuid() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, g_selected_device), "cudaGetDeviceProperties");
  const auto* bytes = reinterpret_cast<const std::byte*>(p.uuid.bytes);
  return {bytes, bytes + sizeof p.uuid.bytes};
}

std::string describe_device() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, g_selected_device), "cudaGetDeviceProperties");
  return std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.totalGlobalMem >> 30) + " GiB";
}

std::size_t device_memory_bytes() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, g_selected_device), "cudaGetDeviceProperties");
  return p.totalGlobalMem;
}

void* allocate_bytes(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 4 : bytes), "cudaMalloc");
  return p;
}
void free_bytes(void* p) noexcept {
  cudaFree(p);
}
void copy_to_device(void* to, const void* from, std::size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}
void copy_to_host(void* to, const void* from, std::size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}
void copy_on_device(void* to, const void* from, std::size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy on device");
}
void zero_bytes(void* p, std::size_t bytes) {
  check(cudaMemset(p, 0, bytes), "cudaMemset");
}

struct Gpu::Handles {
  cudaStream_t stream = nullptr;  // the legacy default stream: ordered with cudaMemcpy
  cublasHandle_t blas = nullptr;
  DeviceArray<double> partials;  // sum_squares' per-block sums
};

Gpu::Gpu() : h_(std::make_unique<Handles>()) {
  require_gpu();
  check(cudaSetDevice(g_selected_device), "cudaSetDevice");
  check(cublasCreate(&h_->blas), "cublasCreate");
  check(cublasSetStream(h_->blas, h_->stream), "cublasSetStream");
  // fp32 with at least fp32's mantissa (no TF32), so the GEMMs agree with the CPU's to float
  // round-off. Not CUBLAS_PEDANTIC_MATH: on an H200 it ran the MLP's large-batch GEMMs at half
  // the speed of the default's kernels.
  check(cublasSetMathMode(h_->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

Gpu::~Gpu() {
  if (h_->blas) cublasDestroy(h_->blas);
}

void* Gpu::stream() const {
  return h_->stream;
}

void Gpu::synchronize() const {
  check(cudaStreamSynchronize(h_->stream), "cudaStreamSynchronize");
}

// Row-major C[m, n] is column-major C^T[n, m] = op(B)^T op(A)^T: cuBLAS gets B first.
void Gpu::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
               int lda, const float* b, int ldb, float beta, float* c, int ldc) const {
  check(cublasSgemm(h_->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                    trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c,
                    ldc),
        "cublasSgemm");
}

namespace {

constexpr int kThreads = 256;

// One double per block: the block's sum of squares, its threads' partial sums added in a fixed
// tree, so the result does not depend on scheduling.
// sum (x_i - p_i)^2 in double per block, each difference rounded to float as the host's loop
// (p == nullptr: sum x_i^2); p_i := x_i where `keep`.
__global__ void block_sum_squares(const float* x, float* previous, bool keep, std::size_t n,
                                  double* out) {
  __shared__ double lane[kThreads];
  double s = 0.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * kThreads) {
    float v = x[i];
    if (previous) {
      v = __fsub_rn(x[i], previous[i]);
      if (keep) previous[i] = x[i];
    }
    const double d = v;
    s += d * d;
  }
  lane[threadIdx.x] = s;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) lane[threadIdx.x] += lane[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = lane[0];
}

__global__ void move_towards_kernel(float* ema, const float* w, float alpha, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x;
  if (i < n) ema[i] += alpha * (w[i] - ema[i]);
}

// One block per row, its threads along the row.
__global__ void gather_rows_kernel(const float* table, std::int64_t dim, const std::int32_t* rows,
                                   float* out) {
  const float* from = table + static_cast<std::int64_t>(rows[blockIdx.x]) * dim;
  float* to = out + static_cast<std::int64_t>(blockIdx.x) * dim;
  for (std::int64_t j = threadIdx.x; j < dim; j += blockDim.x) to[j] = from[j];
}

}  // namespace

void Gpu::gather_rows(const float* table, std::int64_t dim, const std::int32_t* rows,
                      std::int64_t count, float* out) const {
  if (count == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(count), kThreads, 0, h_->stream>>>(table, dim, rows,
                                                                                out);
  check(cudaGetLastError(), "gather_rows");
}

void Gpu::move_towards(float* ema, const float* w, float alpha, std::size_t n) const {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  move_towards_kernel<<<blocks, kThreads, 0, h_->stream>>>(ema, w, alpha, n);
  check(cudaGetLastError(), "move_towards");
}

double Gpu::sum_squares(const float* x, std::size_t n) const {
  return sum_squared_change(x, nullptr, n, false);
}

double Gpu::sum_squared_change(const float* x, float* previous, std::size_t n, bool keep) const {
  constexpr int kBlocks = 264;  // two per SM on an H100/H200; any count gives a fixed order
  if (h_->partials.size() < kBlocks) h_->partials = DeviceArray<double>(kBlocks);
  block_sum_squares<<<kBlocks, kThreads, 0, h_->stream>>>(x, previous, keep, n,
                                                          h_->partials.data());
  check(cudaGetLastError(), "block_sum_squares");
  std::vector<double> parts(kBlocks);
  check(cudaMemcpyAsync(parts.data(), h_->partials.data(), kBlocks * sizeof(double),
                        cudaMemcpyDeviceToHost, h_->stream),
        "cudaMemcpyAsync");
  synchronize();
  double total = 0.0;
  for (double p : parts) total += p;
  return total;
}

void Gpu::scale(float* x, float alpha, std::size_t n) const {
  if (n == 0) return;
  check(cublasSscal_64(h_->blas, static_cast<std::int64_t>(n), &alpha, x, 1), "cublasSscal");
}

static_assert(kNcclUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);

std::vector<std::byte> nccl_unique_id() {
  ncclUniqueId id{};
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const auto* bytes = reinterpret_cast<const std::byte*>(id.internal);
  return {bytes, bytes + sizeof id.internal};
}

NcclCommunicator::NcclCommunicator(std::span<const std::byte> unique_id, int ranks, int rank) {
  ncclUniqueId id{};
  if (unique_id.size() != sizeof id.internal)
    throw DeviceError("NCCL: a unique id of the wrong size");
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

void NcclCommunicator::allreduce_sum(const Gpu& gpu, float* data, std::size_t count) const {
  check(ncclAllReduce(data, data, count, ncclFloat, ncclSum, static_cast<ncclComm_t>(comm_),
                      static_cast<cudaStream_t>(gpu.stream())),
        "ncclAllReduce");
}

void nccl_allreduce_one_rank(const Gpu& gpu, float* data, std::size_t count) {
  ncclComm_t comm = nullptr;
  int device = g_selected_device;
  check(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll");
  const ncclResult_t r = ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm,
                                       static_cast<cudaStream_t>(gpu.stream()));
  gpu.synchronize();
  ncclCommDestroy(comm);
  check(r, "ncclAllReduce");
}

std::string library_versions() {
  int runtime = 0, nccl = 0, blas = 0;
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  cublasGetVersion(nullptr, &blas);
  const std::size_t dnn = cudnnGetVersion();
  auto dotted = [](long v, long major_div, long minor_div) {
    return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div);
  };
  return "CUDA runtime " + dotted(runtime, 1000, 10) + ", cuBLAS " + std::to_string(blas) +
         ", cuDNN " + std::to_string(dnn) + ", NCCL " + std::to_string(nccl);
}

}  // namespace lbt::cuda
