// A Device (core/device.hpp) that records the allocations asked of it and delegates to the host,
// or claims memory the host cannot read: what a second backend looks like to the parts that
// allocate through the seam.
#pragma once
#include <cstddef>
#include <vector>

#include "core/device.hpp"

namespace lbt::test {

class RecordingDevice final : public Device {
 public:
  explicit RecordingDevice(bool host_memory = true) : host_memory_(host_memory) {}
  mutable std::vector<std::size_t> allocations;

  const char* name() const override { return host_memory_ ? "recording" : "elsewhere"; }
  bool host_memory() const override { return host_memory_; }
  AlignedBuffer allocate(std::size_t floats) const override {
    allocations.push_back(floats);
    return host().allocate(floats);
  }
  void copy(std::span<const float> from, std::span<float> to) const override {
    host().copy(from, to);
  }
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) const override {
    host().gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  double sum_squares(std::span<const float> x) const override { return host().sum_squares(x); }
  double dot(std::span<const float> x, std::span<const float> y) const override {
    return host().dot(x, y);
  }

 private:
  static const Device& host() { return host_device(); }
  bool host_memory_;
};

}  // namespace lbt::test
