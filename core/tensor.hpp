// Host tensors: 64-byte aligned float buffers (AVX-512 lines), allocated once and reused, with
// Eigen maps for the math. Row-major [rows, cols] matrices throughout, as PyTorch lays them out.
#pragma once
#include <Eigen/Core>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>

namespace lbt {

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<MatrixRM, Eigen::Aligned64>;
using ConstMatMap = Eigen::Map<const MatrixRM, Eigen::Aligned64>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};

// Buffers of at least an eighth of a 2 MiB page are rounded up to whole pages, aligned to them
// and marked for transparent huge pages (madvise; the kernel's default mode here): an
// activation tensor of ResNet-8 at batch 128 spans 2,048 4 KiB pages, and the layers' strided
// passes over 16 planes at a time touch 16 pages per 64-byte step. The per-thread convolution
// workspaces (256 KiB to 1 MiB; the Winograd input transform writes 36 planes at once) count
// too: on 4 KiB pages that transform took 12% of a 2-thread ResNet-8 step against 5% single
// thread, and the 2-thread step ran 1.11x / 1.04x / 1.02x faster on huge pages at batch
// 32 / 128 / 512, for 50 MB more resident memory at batch 512.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kHugePageMinBytes = kHugePageBytes / 8;
void advise_huge_pages(void* p, std::size_t bytes);

// A zero-initialised aligned float array that never reallocates behind the caller's back.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n) { resize(n); }

  // Grows (never shrinks) the allocation; contents are zeroed on growth.
  void resize(std::size_t n) {
    if (n > capacity_) {
      const std::size_t bytes = allocation_bytes(n);
      const bool huge = bytes >= kHugePageMinBytes;
      float* p = static_cast<float*>(
          std::aligned_alloc(huge ? kHugePageBytes : 64, bytes == 0 ? 64 : bytes));
      if (!p) throw std::bad_alloc();
      if (huge) advise_huge_pages(p, bytes);
      std::fill(p, p + bytes / sizeof(float), 0.0f);
      data_.reset(p);
      capacity_ = bytes / sizeof(float);
    }
    size_ = n;
  }
  // Bytes a buffer of n floats holds (all resident: growth zero-fills them): 64-byte lines,
  // whole 2 MiB pages from kHugePageMinBytes. Memory estimates count buffers with it.
  static std::size_t allocation_bytes(std::size_t n) {
    const std::size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
    if (bytes < kHugePageMinBytes) return bytes;
    return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  }
  void zero() {
    float* p = data();
    const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(size_);
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (std::ptrdiff_t i = 0; i < n; ++i) p[i] = 0.0f;
  }

  float* data() {
    return data_.get();
  }
  const float* data() const {
    return data_.get();
  }
  std::size_t size() const {
    return size_;
  }
  std::span<float> span() {
    return {data(), size_};
  }
  std::span<const float> span() const {
    return {data(), size_};
  }
  float& operator[](std::size_t i) {
    return data_[i];
  }
  float operator[](std::size_t i) const {
    return data_[i];
  }

  // Views the first rows*cols floats as a row-major matrix.
  MatMap mat(std::ptrdiff_t rows, std::ptrdiff_t cols) {
    return MatMap(data(), rows, cols);
  }
  ConstMatMap mat(std::ptrdiff_t rows, std::ptrdiff_t cols) const {
    return ConstMatMap(data(), rows, cols);
  }

 private:
  std::unique_ptr<float[], AlignedFree> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// AlignedBuffer::allocation_bytes of a signed count (0 for none): what memory estimates sum.
inline std::int64_t aligned_buffer_bytes(std::int64_t floats) {
  return floats <= 0 ? 0
                     : static_cast<std::int64_t>(
                           AlignedBuffer::allocation_bytes(static_cast<std::size_t>(floats)));
}

}  // namespace lbt
