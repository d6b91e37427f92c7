// lbt doctor --device cuda: every GPU op beside the CPU backend on the same random inputs, as a
// table of errors against float32 tolerances (docs/DESIGN.md "Backends": GPU code runs only
// behind this check against the CPU).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lbt::experiments {

struct DeviceCheckRow {
  std::string op;        // "gemm NT 300x200x100", "adamw x100 steps", ...
  double max_abs_error;  // max |gpu - cpu| over the op's outputs
  double scale;          // max |cpu|: the error is read relative to it
  double tolerance;      // on max_abs_error / scale; 0: bit for bit
  std::string why;       // where the tolerance comes from
  // The layer types (LayerSpec::type, or "per_example_noise" / "two_batch_noise" for a noise
  // estimator's sums) only this row vouches for: a run is refused for its disagreement only where
  // it uses one of them. Empty: every run relies on the row.
  std::vector<std::string> layers = {};
  double relative() const { return scale > 0 ? max_abs_error / scale : max_abs_error; }
  bool ok() const { return relative() <= tolerance; }
};

struct DeviceCheckReport {
  std::string device;     // "NVIDIA H200, sm_90, 139 GiB"
  std::string libraries;  // CUDA runtime, cuBLAS, cuDNN, NCCL versions
  std::vector<DeviceCheckRow> rows;
  bool ok() const;
  // Whether a run of these layer types may train: every row it relies on agrees.
  bool ok_for(const std::vector<std::string>& layer_types) const;
};

// Whether this lbt was built with the CUDA parts (LBT_WITH_CUDA found nvcc).
bool cuda_built();

// Runs every check on GPU 0. Throws ConfigError (exit 2) when lbt was built without CUDA or no
// GPU is present, with the reason in one line.
DeviceCheckReport check_cuda_device(std::uint64_t seed = 1);

// The report as a table, one line per op, and a last line saying whether the device agrees.
std::string format_report(const DeviceCheckReport& report);

}  // namespace lbt::experiments
