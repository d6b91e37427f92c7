// `lbt memory`: a config's bytes per rank (trainer/memory_estimate.hpp) at the micro-batches of
// some global batches, the largest micro-batch that fits a memory budget, and with --probe the
// check against reality: real training steps in fresh child processes, one per micro-batch, on
// the given workers (mpirun beyond one), whose every rank's peak resident set must lie within a
// tolerance of the estimate (memory_probe.hpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/memory_estimate.hpp"

namespace lbt::experiments {

struct MemoryOptions {
  std::filesystem::path config_path;
  std::vector<std::string> sets;             // --set key=value
  std::vector<std::int64_t> global_batches;  // empty: the config's train.global_batch
  int workers = 1;
  std::int64_t memory = std::int64_t{16} << 30;  // the budget per rank, bytes
  bool probe = false;
  double tolerance = 0.10;  // --probe: |measured / estimate - 1| allowed
  // The process's own resident set before it loaded anything; < 0: measure it now (a caller
  // that has already loaded data measures it at its start).
  std::int64_t runtime_bytes = -1;
  // workers > 1: measure an MPI rank's baseline with mpirun (memory_probe.hpp) for the runtime
  // part (lbt memory; always with probe); false (lbt plan): the single process's, which misses
  // MPI's own memory.
  bool measure_mpi_runtime = false;
};

// One probe: `lbt train` at this micro-batch (on the report's workers, no accumulation) for 2
// steps; per rank, in rank order: the estimate's total and the rank's peak RSS, in bytes.
// The compute libraries' own memory (the thread team, the GEMMs' buffers), which varies by
// machine and is not modelled: a probe within it of the estimate passes, whatever the ratio (on
// the synthetic preset's 21 MiB it read 4.7 MiB over, ratio 1.22, "OFF"; 2026-11-30 audit).
inline constexpr std::int64_t kProbeSlackBytes = std::int64_t{8} << 20;

struct ProbeResult {
  std::int64_t micro_batch = 0;
  std::vector<std::int64_t> estimate, measured;
  double ratio(std::size_t rank) const {
    return static_cast<double>(measured[rank]) / static_cast<double>(estimate[rank]);
  }
  // Within `tolerance` of the estimate, or within kProbeSlackBytes of it.
  bool within(std::size_t rank, double tolerance) const {
    return std::abs(ratio(rank) - 1.0) <= tolerance ||
           std::abs(measured[rank] - estimate[rank]) <= kProbeSlackBytes;
  }
};

struct MemoryReport {
  std::string model, optimizer;
  std::int64_t num_params = 0;
  int optimizer_buffers = 0, workers = 1, threads = 1;
  std::int64_t accum_steps = 1;  // the config's, at its own global batch and these workers
  std::vector<std::int64_t> global_batches;
  std::vector<trainer::MemoryEstimate> estimates;  // one per global batch
  std::int64_t per_example = 0;  // bytes one more example adds, past the evaluation batch
  std::int64_t budget = 0;
  std::int64_t max_micro_batch = 0, max_micro_batch_sharded = 0;
  std::int64_t train_examples_per_rank = 0;  // a micro-batch past it has no full step
  std::vector<ProbeResult> probes;
  bool mpi_runtime_measured = false;  // workers > 1: the runtime part is an MPI rank's (max)
  double tolerance = 0.10;
  bool probes_ok() const;
};

// Resolves the config as `lbt train` would (ConfigError, exit 2, on bad keys), loads its data,
// builds its model and estimates; with options.probe first runs the probes (before this
// process loads anything: a child's peak would otherwise start from its parent's).
MemoryReport memory_report(const MemoryOptions& options);

// The report as a terminal table: parts per global batch, the largest micro-batch, probes.
std::string format_memory_report(const MemoryReport& report);
// The largest micro-batch that fits the budget and the global batch it allows.
std::string format_memory_fit(const MemoryReport& report);
// The few lines `lbt plan` prints: the total per rank at each global batch, then the fit.
std::string format_memory_summary(const MemoryReport& report);

}  // namespace lbt::experiments
