// lbt-doctor SEED: what `lbt doctor --device cuda` runs (cli/cmd_doctor.cpp): the GPU parts
// beside the CPU backend, the table on stdout; exit 0 (agrees), 4 (disagrees), 2 (no GPU).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/kernel_choice.hpp"
#include "experiments/device_check.hpp"

int main(int argc, char** argv) {
  try {
    lbt::check_kernel_choices();
    const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
    const lbt::experiments::DeviceCheckReport report = lbt::experiments::check_cuda_device(seed);
    std::fputs(lbt::experiments::format_report(report).c_str(), stdout);
    if (!report.ok())
      throw lbt::DeviceError("the GPU disagrees with the CPU backend (table above)",
                             "do not train on this device; report the table");
    return 0;
  } catch (const lbt::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return e.exit_code();
  }
}
