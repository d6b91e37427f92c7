// continue_on_device; see commands.hpp.
#include <filesystem>
#include <string>

#include "cli/commands.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/child_process.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/device_step.hpp"
#include "trainer/device_support.hpp"

namespace lbt::cli {

void continue_on_device(Config& config) {
  const std::string device = config.get_string(Schema::in(trainer::train_keys(), "model.device"));
  if (device == "cpu" || trainer::device_step_factory(device)) return;
  // What the device cannot run yet is refused here too, built with CUDA or not.
  trainer::device_model_plan(trainer::resolve_run_config(config, 1), {});
  const std::filesystem::path program = experiments::self_executable().parent_path() / "lbt-cuda";
  if (!std::filesystem::exists(program)) {
    throw ConfigError("model.device=" + device + ": this lbt was built without CUDA (no " +
                          program.string() + ")",
                      "rebuild where nvcc is (cmake -DLBT_WITH_CUDA=ON), or set model.device=cpu");
  }
  experiments::exec_with_own_arguments(program);
}

}  // namespace lbt::cli
