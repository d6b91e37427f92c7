// The GPU parts against the CPU backend (experiments/device_check.hpp, what lbt doctor --device
// cuda prints): every row within its tolerance. Where no GPU is, the test reports itself
// skipped (exit 77, CTest's SKIP_RETURN_CODE) with the reason.
#define BOOST_TEST_MODULE gpu
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>

#include "core/cuda/gpu.hpp"
#include "experiments/device_check.hpp"

namespace {

// Runs before Boost.Test, so a machine without a GPU skips the whole suite in one line.
const bool kGpuPresent = [] {
  std::string why;
  if (lbt::cuda::device_count(&why) > 0) return true;
  std::printf("skipped: no CUDA device (%s)\n", why.c_str());
  std::exit(77);
}();

}  // namespace

BOOST_AUTO_TEST_CASE(every_gpu_op_agrees_with_the_cpu_backend) {
  BOOST_REQUIRE(kGpuPresent);
  const lbt::experiments::DeviceCheckReport report = lbt::experiments::check_cuda_device(7);
  BOOST_TEST_MESSAGE(lbt::experiments::format_report(report));
  BOOST_TEST(report.rows.size() >= 18u);
  for (const auto& row : report.rows) {
    BOOST_TEST_CONTEXT(row.op) {
      BOOST_TEST(row.relative() <= row.tolerance);
    }
  }
}

// A second seed: agreement is not an accident of one draw.
BOOST_AUTO_TEST_CASE(agreement_holds_for_another_seed) {
  BOOST_TEST(lbt::experiments::check_cuda_device(12345).ok());
}
