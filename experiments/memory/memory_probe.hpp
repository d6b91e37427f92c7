// `lbt memory --probe`'s real runs: `lbt train` for 2 steps at each micro-batch in a fresh
// process, one rank (its peak resident set from wait4) or N ranks under mpirun (each rank's own
// peak, getrusage's ru_maxrss, which the run writes into summary.json as peak_rss_bytes), and
// the baseline of an MPI rank (its resident set after MPI_Init and the first collectives, before
// it loads anything: the multi-rank estimate's runtime part).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lbt::experiments {

struct ProbeSetup {
  std::filesystem::path config_path;
  std::vector<std::string> sets;  // --set key=value
  int workers = 1;
  int threads = 1;  // per rank: the estimate's, so mpirun's core binding cannot change it
};

// One micro-batch's run: each rank's peak resident set in bytes, in rank order.
struct ProbePeaks {
  std::int64_t micro_batch = 0;
  std::vector<std::int64_t> per_rank;
};

// Runs the probes at `micro_batches` (global batch workers x b, no accumulation), each in a
// fresh process; throws Error naming the failed run and its log's last lines.
std::vector<ProbePeaks> run_probes(const ProbeSetup& setup,
                                   const std::vector<std::int64_t>& micro_batches);

// `mpirun -np workers lbt memory --config FILE --mpi-runtime`: each rank's resident set once
// MPI is up (mpi_runtime_main), in rank order. Throws ConfigError when mpirun is not on PATH.
std::vector<std::int64_t> measure_mpi_runtime(const ProbeSetup& setup);

// The body of the hidden `lbt memory --mpi-runtime`, run by each rank: MPI_Init and the
// collectives lbt train makes before loading data (a barrier, an allreduce, a broadcast), then
// rank 0 prints every rank's VmRSS on one line "mpi-runtime-bytes: R0 R1 ...".
void mpi_runtime_main();

// The path of mpirun on PATH; ConfigError naming the fix when there is none.
std::filesystem::path find_mpirun();

}  // namespace lbt::experiments
