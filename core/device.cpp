// The host device; see device.hpp.
#include "core/device.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/sum_squares.hpp"

namespace lbt {
namespace {

class HostDevice final : public Device {
 public:
  const char* name() const override { return "cpu"; }
  bool host_memory() const override { return true; }
  AlignedBuffer allocate(std::size_t floats) const override { return AlignedBuffer(floats); }
  void copy(std::span<const float> from, std::span<float> to) const override {
    std::copy(from.begin(), from.end(), to.begin());
  }
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) const override {
    sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  double sum_squares(std::span<const float> x) const override { return lbt::sum_squares(x); }
  double dot(std::span<const float> x, std::span<const float> y) const override {
    return lane_sum<double, 32>(x.size(), [&](std::size_t i) {
      return static_cast<double>(x[i]) * static_cast<double>(y[i]);
    });
  }
};

}  // namespace

const Device& host_device() {
  static const HostDevice device;
  return device;
}

void require_host_memory(const Device& device, const char* part) {
  if (device.host_memory()) return;
  throw Error(std::string(part) + " computes on host memory; device '" + device.name() +
              "' keeps its buffers elsewhere: that backend must bring its own (docs/DESIGN.md "
              "\"Backends\")");
}

}  // namespace lbt
