// MpiCommunicator; see mpi_communicator.hpp. Avg is an MPI_SUM followed by a scale by 1/K in
// the same piece, while it is still in cache (with the gradient's norm in that pass).
#include "trainer/comm/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/sum_squares.hpp"
#include "trainer/comm/mpi_check.hpp"

namespace lbt::comm {
namespace detail {

void throw_mpi_error(int code, const char* expr, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof text, "code %d", code);
  int rank = -1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw CommError(std::string(expr) + " failed on rank " + std::to_string(rank) + " (" + file +
                      ":" + std::to_string(line) + "): " + text,
                  "check that every rank calls the same collectives with the same sizes; "
                  "rerun with `mpirun --mca mpi_abort_print_stack 1` for more detail");
}

}  // namespace detail

namespace {

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}

MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0, finalized = 0;
  LBT_MPI_CHECK(MPI_Finalized(&finalized));
  if (finalized) {
    throw CommError("MPI was already finalized in this process and cannot start again",
                    "keep one communicator for the whole process (comm::process_communicator)");
  }
  LBT_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // Only the main thread calls MPI (the prefetch thread never does).
    int provided = 0;
    LBT_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    owns_mpi_ = true;
  }
  // Errors on the world communicator during setup come back as codes, too.
  LBT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  LBT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  LBT_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  LBT_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  LBT_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  // No throwing here: a destructor may run while an exception unwinds.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  shm_.reset();  // its windows and node communicator go before comm_
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (owns_mpi_) MPI_Finalize();
}

template <typename T>
double MpiCommunicator::allreduce_chunked(std::span<T> buf, ReduceOp op, bool want_sq) {
  const std::size_t chunk = kChunkBytes / sizeof(T);
  const T scale = op == ReduceOp::kAvg ? T(1) / static_cast<T>(size_) : T(1);
  double sq = 0.0;
  for (std::size_t start = 0; start < buf.size(); start += chunk) {
    const std::size_t count = std::min(chunk, buf.size() - start);
    T* piece = buf.data() + start;
    LBT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, piece, static_cast<int>(count), mpi_type<T>(),
                                mpi_op(op), comm_));
    if constexpr (std::is_same_v<T, float>) {
      if (want_sq) {
        sq += scale_and_sum_squares(piece, count, scale);
        continue;
      }
    }
    if (scale != T(1)) {
#pragma omp simd
      for (std::size_t i = 0; i < count; ++i) piece[i] *= scale;
    }
  }
  return sq;
}

void MpiCommunicator::allreduce(std::span<float> buf, ReduceOp op) {
  allreduce_chunked(buf, op);
}
void MpiCommunicator::allreduce(std::span<double> buf, ReduceOp op) {
  allreduce_chunked(buf, op);
}

double MpiCommunicator::allreduce_sq_norm(std::span<float> buf, ReduceOp op) {
  if (op == ReduceOp::kMax) return Communicator::allreduce_sq_norm(buf, op);
  if (shm_ && shm_->owns(buf)) return shm_->reduce(buf, op);
  return allreduce_chunked(buf, op, /*want_sq=*/true);
}

std::unique_ptr<BucketedAllreduce> MpiCommunicator::bucketed_allreduce(std::span<float> buf,
                                                                       ReduceOp op,
                                                                       std::size_t bucket_floats) {
  if (op != ReduceOp::kMax && shm_ && shm_->owns(buf))
    return shm_->bucketed(buf, op, bucket_floats);
  return Communicator::bucketed_allreduce(buf, op, bucket_floats);
}

LentMemory MpiCommunicator::lend(std::size_t n, bool one_copy) {
  if (size_ == 1) return {};
  if (!shm_) shm_ = std::make_unique<ShmReducer>(comm_);
  return shm_->lend(n, one_copy);
}

LentMemory MpiCommunicator::gradient_memory(std::size_t n) {
  return lend(n, false);
}

LentMemory MpiCommunicator::shared_parameter_memory(std::size_t n) {
  return lend(n, true);
}

void MpiCommunicator::broadcast(std::span<std::byte> buf, int root) {
  if (root < 0 || root >= size_) {
    throw CommError("broadcast root " + std::to_string(root) + " is not a rank of a world of " +
                    std::to_string(size_));
  }
  for (std::size_t start = 0; start < buf.size(); start += kChunkBytes) {
    const std::size_t count = std::min(kChunkBytes, buf.size() - start);
    LBT_MPI_CHECK(MPI_Bcast(buf.data() + start, static_cast<int>(count), MPI_BYTE, root, comm_));
  }
}

void MpiCommunicator::allgather(std::span<const float> mine, std::span<float> all) {
  if (all.size() != mine.size() * static_cast<std::size_t>(size_)) {
    throw CommError("allgather needs an output of world size x input = " + std::to_string(size_) +
                        " x " + std::to_string(mine.size()) + " floats, got " +
                        std::to_string(all.size()),
                    "size the output buffer as comm.size() * mine.size()");
  }
  if (mine.size() > static_cast<std::size_t>(INT_MAX)) {
    throw CommError("allgather of " + std::to_string(mine.size()) +
                    " floats per rank exceeds MPI's int count");
  }
  LBT_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(),
                              static_cast<int>(mine.size()), MPI_FLOAT, comm_));
}

void MpiCommunicator::barrier() {
  LBT_MPI_CHECK(MPI_Barrier(comm_));
}

void MpiCommunicator::abort(int code, std::string_view why) {
  std::fprintf(stderr, "lbt: rank %d of %d aborting the job (exit code %d): %.*s\n", rank_, size_,
               code, static_cast<int>(why.size()), why.data());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

}  // namespace lbt::comm
