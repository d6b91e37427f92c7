// Data-parallel collectives over MPI (OpenMPI): one process per rank, started by mpirun/srun.
// Owns MPI's lifetime when it started MPI (MPI_Init_thread here, MPI_Finalize in the
// destructor) and works on a private duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so
// every failure becomes a CommError (mpi_check.hpp). Large allreduces go in ~8 MiB pieces
// (shared/BENCHMARKING.md "Communication": MPI's buffers page-fault above ~32 MiB).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>

#include "trainer/comm/communicator.hpp"
#include "trainer/comm/shm_reducer.hpp"

namespace lbt::comm {

class MpiCommunicator final : public Communicator {
 public:
  // Bytes per allreduce/broadcast piece; measured in bench/allreduce.cpp.
  static constexpr std::size_t kChunkBytes = std::size_t{8} << 20;

  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }
  void allreduce(std::span<float> buf, ReduceOp op) override;
  void allreduce(std::span<double> buf, ReduceOp op) override;
  // Buffers lent by gradient_memory reduce in shared memory (shm_reducer.hpp); others as the base.
  double allreduce_sq_norm(std::span<float> buf, ReduceOp op) override;
  LentMemory gradient_memory(std::size_t n) override;
  // Buffers lent by gradient_memory overlap (ShmReducer::bucketed); others as the base.
  std::unique_ptr<BucketedAllreduce> bucketed_allreduce(std::span<float> buf, ReduceOp op,
                                                        std::size_t bucket_floats) override;
  LentMemory shared_parameter_memory(std::size_t n) override;
  void broadcast(std::span<std::byte> buf, int root) override;
  void allgather(std::span<const float> mine, std::span<float> all) override;
  void barrier() override;
  [[noreturn]] void abort(int code, std::string_view why) override;

 private:
  // MPI sums piece by piece; kAvg scales each piece while it is in cache. With want_sq (float)
  // that pass also returns the result's sum of squares.
  // Shared-memory windows from shm_, made on first use (every rank calls in the same order).
  LentMemory lend(std::size_t n, bool one_copy);
  template <typename T>
  double allreduce_chunked(std::span<T> buf, ReduceOp op, bool want_sq = false);

  bool owns_mpi_ = false;  // this object called MPI_Init, so it calls MPI_Finalize
  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;    // private duplicate of MPI_COMM_WORLD
  std::unique_ptr<ShmReducer> shm_;  // made by the first gradient_memory call (collective)
};

}  // namespace lbt::comm
