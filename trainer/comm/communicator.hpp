// The transport behind data-parallel training: a few collectives. One process goes through the
// same interface (LocalCommunicator), so the trainer never branches on world size or names MPI.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

namespace lbt::comm {

enum class ReduceOp { kSum, kAvg, kMax };

// Memory a communicator lends for a flat buffer (gradient_memory, shared_parameter_memory);
// `owner` keeps it lent. Empty where the backend has nothing better than the caller's own.
struct LentMemory {
  std::span<float> floats;
  std::shared_ptr<void> owner;
};

// The step's gradient allreduce in buckets, overlapped with backward (train.overlap_comm).
// Made once per run for one buffer; each step: ready() as backward finishes the buffer's
// suffixes, then finish(). The result, and the squared norm finish() returns, are bitwise those
// of allreduce_sq_norm on the same buffer (the oracle, kept as the non-overlapped path).
class BucketedAllreduce {
 public:
  virtual ~BucketedAllreduce() = default;
  // False where this transport has no overlapped path (everything happens in finish()).
  virtual bool overlaps() const = 0;
  // buf[from, n) holds this rank's final gradient: start every bucket lying inside it.
  virtual void ready(std::size_t from) = 0;
  // Starts what is left, waits for every bucket; the squared L2 norm of the result.
  virtual double finish() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;                         // "local", "mpi"
  virtual void allreduce(std::span<float> buf, ReduceOp op) = 0;   // in place
  virtual void allreduce(std::span<double> buf, ReduceOp op) = 0;  // metrics, noise sums
  // The step's gradient allreduce: `buf` reduced in place (kSum or kAvg), returning the squared
  // L2 norm of the result, bitwise the same on every rank. Here: allreduce, then the norm;
  // MpiCommunicator reduces buffers from gradient_memory in shared memory instead.
  virtual double allreduce_sq_norm(std::span<float> buf, ReduceOp op);
  // Memory for a gradient buffer of n floats (64-byte aligned) in which allreduce_sq_norm
  // runs fastest, or an empty one. Collective: every rank asks for the same n, in the same
  // order. MPI with every rank on one node lends a shared-memory window slot that the other
  // ranks read and write during the reduction, so it needs no copies (see shm_reducer.hpp).
  virtual LentMemory gradient_memory(std::size_t n);
  // Collective: allreduce_sq_norm of `buf` in buckets of `bucket_floats` (a multiple of 16),
  // each started as soon as ready() covers it. Here: none overlapped, all in finish(); MPI with
  // buffers from gradient_memory reduces them in shared memory on a reducing thread.
  virtual std::unique_ptr<BucketedAllreduce> bucketed_allreduce(std::span<float> buf, ReduceOp op,
                                                                std::size_t bucket_floats);
  // One buffer of n floats that every rank maps (MPI with every rank on one node), or an
  // empty one. Parameters kept there exist once per node: each rank updates its own range for
  // all of them (the trainer's sharded step for elementwise optimizers). Collective.
  virtual LentMemory shared_parameter_memory(std::size_t n);
  virtual void broadcast(std::span<std::byte> buf, int root) = 0;
  virtual void allgather(std::span<const float> mine, std::span<float> all) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job with `code` after printing `why` (no rank hangs alone).
  [[noreturn]] virtual void abort(int code, std::string_view why) = 0;
};

struct CommOptions {
  std::string_view backend = "auto";  // auto | local | mpi
};

// Picks the backend: "auto" uses MPI when launched by mpirun/mpiexec/srun (and built with
// LBT_WITH_MPI), else local. Throws ConfigError naming the missing build option.
std::unique_ptr<Communicator> make_communicator(const CommOptions& options = {});

// The process's one communicator, created by the first call and kept until exit (MPI can be
// initialised only once per process, so sweeps that train many times share it). A later call
// asking for another backend than the one made throws ConfigError. `lbt` uses this; tests and
// benchmarks may also build their own with make_communicator.
Communicator& process_communicator(const CommOptions& options = {});

// The communicator made by process_communicator, or nullptr before the first call. cli/main.cpp
// uses it to abort every rank when an error escapes on one of them.
Communicator* active_communicator();

// Throws CommError on every rank unless all ranks hold the same bytes in `data` (a 64-bit
// hash compared with one max/min allreduce). `what` names the buffer in the message.
void check_identical(Communicator& comm, std::span<const std::byte> data, std::string_view what);

// True when the environment says this process was started by mpirun/mpiexec or srun.
bool launched_by_mpi();

}  // namespace lbt::comm
