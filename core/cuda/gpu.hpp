// The CUDA device as the host sees it: whether one is there, device memory, one stream, cuBLAS
// GEMMs and the reductions every GPU part shares (the GPU half of core/device.hpp's primitives).
// No CUDA header leaks from here, so g++-compiled parts (the doctor, tests, benchmarks) use it
// as they use any C++ library; the .cu files hold the CUDA.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lbt::cuda {

// The GPUs this process sees, or 0 with `why` set ("no CUDA driver", "no device", ...).
int device_count(std::string* why = nullptr);

// Throws ConfigError "no usable NVIDIA GPU: WHY" when device_count() is 0.
void require_gpu();

// The device this process steps on (a CUDA ordinal; 0 until chosen): every Gpu made after the
// call, and describe_device, use it. With several ranks each takes its own
// (trainer/device_placement.hpp).
void select_device(int ordinal);

// The selected device's UUID (16 bytes): ranks holding the same GPU see the same bytes.
std::vector<std::byte> device_uuid();

// Name and compute capability of the selected device, for reports ("NVIDIA H200, sm_90").
std::string describe_device();

// The selected device's memory in bytes (cudaDeviceProp::totalGlobalMem).
std::size_t device_memory_bytes();

// Raw device memory (cudaMalloc) and copies. Every part runs on the legacy default stream, so a
// copy is ordered with the kernels before and after it.
void* allocate_bytes(std::size_t bytes);
void free_bytes(void* p) noexcept;
void copy_to_device(void* to, const void* from, std::size_t bytes);
void copy_to_host(void* to, const void* from, std::size_t bytes);
void copy_on_device(void* to, const void* from, std::size_t bytes);
void zero_bytes(void* p, std::size_t bytes);

// A typed device allocation, zeroed, freed with its owner.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n)
      : n_(n), p_(static_cast<T*>(allocate_bytes(n * sizeof(T))), &free_bytes) {
    zero_bytes(p_.get(), n * sizeof(T));
  }
  explicit DeviceArray(std::span<const T> host) : DeviceArray(host.size()) { upload(host); }
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  std::size_t size() const { return n_; }
  void upload(std::span<const T> host) {
    copy_to_device(p_.get(), host.data(), host.size() * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    copy_to_host(host.data(), p_.get(), n_ * sizeof(T));
    return host;
  }

 private:
  std::size_t n_ = 0;
  std::unique_ptr<T, void (*)(void*)> p_{nullptr, &free_bytes};
};

// The selected device and one cuBLAS handle (fp32 math: no TF32, so GEMMs agree with the CPU's to
// float32 round-off). Every kernel of a Gpu's parts runs on its stream.
class Gpu {
 public:
  Gpu();
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // Row-major C = alpha op(A) op(B) + beta C on device pointers (core/device.hpp's convention).
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) const;
  // sum x_i^2 accumulated in double, per block then in block order: the same value every run.
  double sum_squares(const float* x, std::size_t n) const;
  // sum (x_i - previous_i)^2 likewise, each difference rounded to float first (the noise
  // estimator's change of the gradient between micro-batches, noise/gradient_reader.hpp);
  // previous := x where `keep`.
  double sum_squared_change(const float* x, float* previous, std::size_t n, bool keep) const;
  // ema += alpha (w - ema), element by element, rounded as the host's loop (no fused
  // multiply-add): the weights' EMA that steps-to-target reads (trainer/target_reading.hpp).
  void move_towards(float* ema, const float* w, float alpha, std::size_t n) const;
  // out[i, :] = table[rows[i], :] for i < count: a batch drawn from a dataset kept on the device
  // (rows: device int32s).
  void gather_rows(const float* table, std::int64_t dim, const std::int32_t* rows,
                   std::int64_t count, float* out) const;
  // x *= alpha, element by element (cublasSscal: each product rounded once, as the host's).
  void scale(float* x, float alpha, std::size_t n) const;
  // Waits for everything queued on the stream.
  void synchronize() const;
  void* stream() const;  // cudaStream_t

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

// NCCL all-reduce (sum) of `count` floats in place over a communicator of this process's one
// GPU: the library path the trainer's gradient reduction takes with one rank per GPU. NCCL
// refuses two ranks on one device, so a single-GPU machine checks the one-rank path only.
void nccl_allreduce_one_rank(const Gpu& gpu, float* data, std::size_t count);

// NCCL across ranks, one GPU each (ncclCommInitRank, collective over the ranks). The ranks'
// bootstrap, rank 0's unique id, travels by the caller's communicator (MPI), which this header
// does not name: rank 0 calls nccl_unique_id and broadcasts its bytes.
inline constexpr std::size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
std::vector<std::byte> nccl_unique_id();
class NcclCommunicator {
 public:
  NcclCommunicator(std::span<const std::byte> unique_id, int ranks, int rank);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  // Sum over the ranks, in place, queued on the gpu's stream.
  void allreduce_sum(const Gpu& gpu, float* data, std::size_t count) const;

 private:
  void* comm_ = nullptr;  // ncclComm_t
};

// The NCCL, cuDNN, cuBLAS and CUDA runtime versions linked ("CUDA 13.0, cuBLAS 13.0.0, ...").
std::string library_versions();

}  // namespace lbt::cuda
