// register_cuda_training and the cached self-check of cuda_training.hpp.
#include "experiments/cuda_training.hpp"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/error.hpp"
#include "core/file_cache.hpp"
#include "core/kernel_choice.hpp"
#include "experiments/child_process.hpp"
#include "experiments/device_check.hpp"
#include "nn/layer_spec.hpp"
#include "trainer/cuda/cuda_step.hpp"
#include "trainer/device_placement.hpp"

namespace lbt::experiments {
namespace {

namespace fs = std::filesystem;

// Passed checks kept on disk, the least recently used removed past it: one per device and build,
// and every rebuild is a new build.
constexpr std::size_t kCachedChecks = 16;

// What a passed check stands for: the device, the libraries loaded and this very program (its
// size and modification time: a rebuild checks again).
std::string device_check_key() {
  const fs::path exe = self_executable();
  std::error_code ec;
  const auto size = fs::file_size(exe, ec);
  const auto mtime = fs::last_write_time(exe, ec).time_since_epoch().count();
  // The convolution algorithms the check ran with too: a pass under "fixed" vouched for
  // "measured" runs whose convolutions it never compared (2026-11-30 review).
  return lbt::cuda::describe_device() + "|" + lbt::cuda::library_versions() + "|" + exe.string() +
         "|" + std::to_string(size) + "|" + std::to_string(mtime) + "|cudnn " +
         std::string(kernel_choice(KernelChoice::kCudnnAlgos));
}

// Runs the doctor's check unless this device and build passed it before; refuses the device
// when a row the run relies on is outside its tolerance (a row that vouches only for layers the
// run does not use, DeviceCheckRow::layers, is reported and does not stop it). Only a check
// passed whole is cached. The cache is a convenience: where it cannot be written the check runs
// at every start.
void check_device_once(const std::vector<std::string>& layer_types) {
  const std::string key = device_check_key();
  if (file_cache::find("cuda-check", key)) return;
  std::fprintf(stderr, "lbt: checking %s against the CPU backend (once per device and build)\n",
               lbt::cuda::describe_device().c_str());
  const DeviceCheckReport report = check_cuda_device(1);
  if (!report.ok_for(layer_types)) {
    std::fputs(format_report(report).c_str(), stderr);
    throw DeviceError(
        "the GPU disagrees with the CPU backend (table above): lbt trains nothing on it",
        "report the table (lbt doctor --device cuda prints it); train with model.device=cpu");
  }
  if (!report.ok()) {
    std::fputs(format_report(report).c_str(), stderr);
    std::fputs("lbt: the rows that disagree cover layers this run does not use: it trains\n",
               stderr);
    return;
  }
  file_cache::store("cuda-check", key, format_report(report), kCachedChecks);
}

// This process's GPU, selected before anything else touches one (trainer/device_placement.hpp):
// one process takes its sweep trial's (device 0 outside a sweep); a rank takes its local
// rank's, and the ranks choose how their gradients meet (collective).
trainer::DevicePlacement place_this_process(comm::Communicator* comm) {
  const int devices = lbt::cuda::device_count();
  trainer::DevicePlacement placement;
  placement.device =
      comm ? trainer::device_for_rank(comm::node_ranks(comm->rank(), comm->size()), devices)
           : trainer::device_for_trial(devices);
  lbt::cuda::select_device(placement.device);
  if (comm) placement.reduction = trainer::choose_reduction(*comm, lbt::cuda::device_uuid());
  return placement;
}

}  // namespace

void register_cuda_training() {
  trainer::register_device_step(
      "cuda",
      [](const trainer::DeviceStepSetup& setup) {
        lbt::cuda::require_gpu();
        const trainer::DevicePlacement placement = place_this_process(setup.comm);
        std::vector<std::string> layer_types;
        for (const nn::LayerSpec& l : setup.plan.layers) layer_types.push_back(l.type);
        if (setup.per_example_noise) layer_types.push_back("per_example_noise");
        if (setup.two_batch_noise) layer_types.push_back("two_batch_noise");
        check_device_once(layer_types);
        return trainer::cuda::make_cuda_step(setup, placement);
      },
      [] { lbt::cuda::require_gpu(); });
}

}  // namespace lbt::experiments
