// The gradient allreduce for ranks that share one node, through an MPI-3 shared-memory window
// (MPI_Win_allocate_shared) instead of MPI's message path.
//
// Why: with one thread per rank on a 2-core machine, MPI_Allreduce over the shared-memory BTL
// copies the 2.7 MB MLP gradient through FIFO fragments (copy in, copy out, sum), and the
// trainer then read it once more for the gradient norm; together 14% of a rank's step (perf).
// Here each rank's gradient buffer *is* its slot of the window. Rank r sums element range r of
// every slot, scales it, writes the result back into every slot and adds up the squares as it
// goes: each rank reads and writes the buffer's size once, and the norm costs nothing.
//
//   barrier  ->  rank r: for i in range r: s = (slot_0[i] + ... + slot_{K-1}[i]) * scale,
//                slot_k[i] = s for every k, partial_r += s^2  ->  barrier  ->  sum of partials
//
// Barriers are MPI_Win_sync + MPI_Barrier + MPI_Win_sync (the MPI-3 shared-memory pattern,
// MPI 4.0 §12.7): ranks touch another rank's slot only between the two barriers of a call.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trainer/comm/communicator.hpp"

namespace lbt::comm {

// Elements [lo, hi) of a buffer: one rank's share of a reduction.
struct ShmRange {
  std::size_t lo = 0, hi = 0;
};

class ShmReducer {
 public:
  // Collective over `comm`. available() is false when its ranks span more than one node.
  explicit ShmReducer(MPI_Comm comm);
  // Frees the windows (collective: only where every rank ends, the communicator's destructor).
  ~ShmReducer();
  ShmReducer(const ShmReducer&) = delete;
  ShmReducer& operator=(const ShmReducer&) = delete;

  bool available() const { return available_; }
  // Collective: a slot of n floats, reusing a window no longer lent, else allocating one;
  // one_copy: a single buffer every rank maps (shared parameters). Throws CommError when ranks
  // disagree on n or on which window to reuse.
  LentMemory lend(std::size_t n, bool one_copy = false);
  // True when buf starts at this rank's slot of a window and fits in it.
  bool owns(std::span<const float> buf) const;
  // Collective; buf as accepted by owns(), the same size on every rank; op kSum or kAvg.
  // Returns the squared L2 norm of the result (the same on every rank).
  double reduce(std::span<float> buf, ReduceOp op);
  // Collective; the same reduction in buckets on a reducing thread, started during backward
  // (shm_bucket_reducer.hpp), bit for bit the same as reduce(); buf as for reduce().
  std::unique_ptr<BucketedAllreduce> bucketed(std::span<float> buf, ReduceOp op,
                                              std::size_t bucket_floats);

  // Rank `rank`'s share of n elements in reduce(): ceil(n / size) rounded up to 64 bytes each.
  static ShmRange range_of(std::size_t n, int rank, int size);
  // Elements [lo, hi) of every slot: summed in rank order, times scale, written back into every
  // slot; returns the sum of squares of the results (core/sum_squares.hpp's lanes).
  static double reduce_range(const std::vector<float*>& slots, std::size_t lo, std::size_t hi,
                             float scale);

 private:
  struct Window {
    MPI_Win win = MPI_WIN_NULL;
    std::size_t capacity = 0;              // floats per slot
    bool one_copy = false;                 // one slot (rank 0's) mapped by all, no reduction
    std::vector<float*> slots;             // every rank's slot, mapped into this process
    std::vector<double*> partials;         // every rank's partial sum of squares
    std::vector<std::uint32_t*> counters;  // every rank's bucket counters (posted, done)
    std::weak_ptr<void> lease;             // expired: free to lend again
  };
  const Window* find(std::span<const float> buf) const;
  void sync(const Window& w);

  MPI_Comm node_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool available_ = false;
  std::vector<std::unique_ptr<Window>> windows_;
};

}  // namespace lbt::comm
