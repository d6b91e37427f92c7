// Where a model's buffers live, and the primitives every part runs on them: the lower half of
// the backend seam (docs/DESIGN.md "Backends"). nn::Backend extends it with layers and losses;
// the parameter store, the optimizer's state and the noise hooks' scratch are allocated through
// it, so they sit on the backend's device. host_device() is the CPU's.
#pragma once
#include <cstddef>
#include <span>

#include "core/tensor.hpp"

namespace lbt {

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;  // "cpu"
  // True where the host CPU reads and writes the buffers. The optimizer's fused step, the noise
  // hooks and the communicator compute on host memory and refuse other devices
  // (require_host_memory) until a backend brings its own.
  virtual bool host_memory() const = 0;
  // Zeroed, 64-byte aligned, growing as AlignedBuffer does.
  virtual AlignedBuffer allocate(std::size_t floats) const = 0;
  virtual void copy(std::span<const float> from, std::span<float> to) const = 0;
  // Row-major C = alpha op(A) op(B) + beta C.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) const = 0;
  // Accumulated in double.
  virtual double sum_squares(std::span<const float> x) const = 0;
  virtual double dot(std::span<const float> x, std::span<const float> y) const = 0;
};

// The host CPU: AlignedBuffer memory, OpenBLAS/Eigen GEMM (core/gemm.hpp), lane sums.
const Device& host_device();

// Throws Error "PART computes on host memory; device NAME keeps its buffers elsewhere: ..."
// unless device.host_memory().
void require_host_memory(const Device& device, const char* part);

}  // namespace lbt
