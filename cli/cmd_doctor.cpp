// `lbt doctor --device cuda`: runs every GPU op beside the CPU backend on random data and prints
// the errors against float32 tolerances (experiments/device_check.hpp); exit 0 when the GPU
// agrees, 4 (device error) when it does not, 2 when there is no GPU or lbt was built without
// CUDA. The check is the program lbt-doctor beside lbt (cli/doctor_main.cpp), so that lbt itself
// does not load the CUDA libraries at every start.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "experiments/child_process.hpp"

namespace lbt::cli {

void add_doctor_command(CLI::App& app) {
  auto device = std::make_shared<std::string>("cuda");
  auto seed = std::make_shared<std::uint64_t>(1);
  CLI::App* cmd =
      app.add_subcommand("doctor",
                         "Checks a device against the CPU backend: every GPU op on random data, "
                         "the MLP's, simple CNN's and ResNet-8's forward, backward and training "
                         "steps, each optimizer for 100 steps, the noise sums, NCCL; exit 4 if a "
                         "row disagrees (a row naming layers refuses only runs that use them)");
  cmd->add_option("--device", *device, "the device to check (cuda)")
      ->check(CLI::IsMember({"cuda"}));
  cmd->add_option("--seed", *seed, "seed of the random inputs")
      ->check(whole_number<std::uint64_t>(0));
  cmd->callback([device, seed] {
#if defined(LBT_HAVE_CUDA_DOCTOR)
    const std::string program =
        (experiments::self_executable().parent_path() / "lbt-doctor").string();
    const std::string seed_text = std::to_string(*seed);
    std::vector<char*> argv{const_cast<char*>(program.c_str()),
                            const_cast<char*>(seed_text.c_str()), nullptr};
    execv(program.c_str(), argv.data());
    throw Error("lbt doctor: cannot run " + program + ": " + std::strerror(errno),
                "build the lbt-doctor target beside lbt (cmake --build build)");
#else
    throw ConfigError(
        "this lbt was built without CUDA (no nvcc at configure time, or LBT_WITH_CUDA=OFF)",
        "install the CUDA toolkit and rebuild with -DLBT_WITH_CUDA=ON");
#endif
  });
}

}  // namespace lbt::cli
