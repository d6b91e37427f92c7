// `lbt doctor --device cuda`: runs every GPU op beside the CPU backend on random data and prints
// the errors against float32 tolerances (experiments/device_check.hpp); exit 0 when the GPU
// agrees, 4 (device error) when it does not, 2 when there is no GPU or lbt was built without
// CUDA.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "experiments/device_check.hpp"

namespace lbt::cli {

void add_doctor_command(CLI::App& app) {
  auto device = std::make_shared<std::string>("cuda");
  auto seed = std::make_shared<std::uint64_t>(1);
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Checks a device against the CPU backend: every GPU op on random data, "
                "forward, backward, each optimizer for 100 steps, the noise sums, NCCL");
  cmd->add_option("--device", *device, "the device to check (cuda)")->check(CLI::IsMember({"cuda"}));
  cmd->add_option("--seed", *seed, "seed of the random inputs");
  cmd->callback([device, seed] {
    const experiments::DeviceCheckReport report = experiments::check_cuda_device(*seed);
    std::fputs(experiments::format_report(report).c_str(), stdout);
    if (!report.ok()) throw DeviceError("the GPU disagrees with the CPU backend (table above)",
                                        "do not train on this device; report the table");
  });
}

}  // namespace lbt::cli
