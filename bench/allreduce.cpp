// Allreduce benchmark (shared/BENCHMARKING.md "Communication"): lbt's chunked
// MpiCommunicator::allreduce, and the trainer's gradient allreduce with its norm on lent memory
// (Communicator::gradient_memory), vs one raw MPI_Allreduce of the same buffer vs a memcpy of it,
// in one run, interleaved per repetition; medians with min-max. Sizes: the MLP 784-512-512-10's
// flat gradient (669,706 floats) and a 25M-float buffer.
//   mpirun -np 2 [--mca btl_vader_single_copy_mechanism none] bench_allreduce [REPS]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "trainer/comm/communicator.hpp"

namespace {

using lbt::bench::Clock;
using lbt::bench::Stats;

// Seconds for `op`, started together on every rank; the slowest rank's time counts.
template <typename Op>
double timed(Op&& op) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  op();
  double s = lbt::bench::seconds_since(t0);
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  lbt::comm::Communicator& comm = lbt::comm::process_communicator({"mpi"});  // MPI_Init inside
  const bool root = comm.rank() == 0;
  if (root) {
    std::printf(
        "allreduce benchmark: %d ranks, %d repetitions after 3 warm-up, times in ms "
        "(median [min-max]), GB/s = buffer bytes / median\n",
        comm.size(), reps);
    std::printf("%-10s %-26s %28s %9s\n", "floats", "variant", "median [min - max] ms", "GB/s");
  }
  double sink = 0.0;  // keeps the norms live
  for (std::size_t n : {std::size_t{669706}, std::size_t{25000000}}) {
    // Tiny values so `reps` sums never overflow; normal floats (no denormal slow path).
    std::vector<float> buf(n, 1e-30f), copy(n, 0.0f);
    // The trainer's path: the gradient buffer in memory the communicator lends (one node:
    // a shared-memory window slot), averaged with its norm in one pass.
    lbt::comm::LentMemory lent = comm.gradient_memory(n);
    std::vector<float> own;
    if (lent.floats.empty()) own.assign(n, 1e-30f);
    std::span<float> grads = lent.floats.empty() ? std::span<float>(own) : lent.floats;
    std::fill(grads.begin(), grads.end(), 1e-30f);
    std::vector<double> lbt_sum, lbt_avg, lbt_grad, raw, mem;
    for (int i = -3; i < reps; ++i) {
      const double a =
          timed([&] { comm.allreduce(std::span<float>(buf), lbt::comm::ReduceOp::kSum); });
      const double b =
          timed([&] { comm.allreduce(std::span<float>(buf), lbt::comm::ReduceOp::kAvg); });
      const double c = timed([&] {
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      });
      const double d = timed([&] { std::memcpy(copy.data(), buf.data(), n * sizeof(float)); });
      const double e =
          timed([&] { sink += comm.allreduce_sq_norm(grads, lbt::comm::ReduceOp::kAvg); });
      if (i < 0) continue;
      lbt_grad.push_back(e);
      lbt_sum.push_back(a);
      lbt_avg.push_back(b);
      raw.push_back(c);
      mem.push_back(d);
    }
    const struct {
      const char* name;
      std::vector<double>* t;
    } rows[] = {
        {"lbt allreduce sum", &lbt_sum},
        {"lbt allreduce avg", &lbt_avg},
        {lent.floats.empty() ? "lbt grads avg+norm (own)" : "lbt grads avg+norm (shm)", &lbt_grad},
        {"raw MPI_Allreduce sum", &raw},
        {"memcpy", &mem}};
    const double raw_median = lbt::bench::stats_of(raw).median;
    for (const auto& row : rows) {
      const Stats s = lbt::bench::stats_of(*row.t);
      if (root) {
        std::printf("%-10zu %-26s %10.3f [%7.3f - %7.3f] %9.2f  (%.2fx raw)\n", n, row.name,
                    s.median * 1e3, s.min * 1e3, s.max * 1e3, n * sizeof(float) / s.median / 1e9,
                    s.median / raw_median);
      }
    }
  }
  if (root) std::printf("(checksum %g)\n", 0.0 * sink);
  return 0;
}
