// Compute threads per rank; see train_run.hpp.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "experiments/child_process.hpp"
#include "experiments/train_run.hpp"
#include "trainer/comm/node_ranks.hpp"

namespace lbt::experiments {

int threads_per_rank(int task_cores, int machine_cores, int local_ranks) {
  return std::max(1, std::min(task_cores, machine_cores / std::max(1, local_ranks)));
}

int default_threads(int world_size) {
  return run_threads(0, world_size, false);
}

int run_threads(int configured, int world_size, bool report) {
  const int local_ranks = comm::node_ranks(0, world_size).local_size;
  const int machine_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int fitting = threads_per_rank(task_cores(), machine_cores, local_ranks);
  if (configured <= 0) return fitting;
  // 4 ranks x 2 threads on 2 cores ran 8-13x slower than 1 thread each, without a word
  // (lbt scaling warned; 2026-11-30 audit).
  const long long total = static_cast<long long>(configured) * local_ranks;
  if (report && total > machine_cores) {
    std::fprintf(stderr,
                 "warning: %d rank(s) on this machine x train.threads = %d is %lld threads on %d "
                 "cores: they take turns and the run is slower (train.threads = 0 picks %d)\n",
                 local_ranks, configured, total, machine_cores, fitting);
  }
  return configured;
}

}  // namespace lbt::experiments
