// ShmReducer; see shm_reducer.hpp.
#include "trainer/comm/shm_reducer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "core/sum_squares.hpp"
#include "trainer/comm/mpi_check.hpp"
#include "trainer/comm/shm_bucket_reducer.hpp"

namespace lbt::comm {
namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

// Elements [lo, hi) of every slot: sum in rank order, scale, write back everywhere; returns
// the sum of squares of the results (core/sum_squares.hpp's lanes). K == 2 is spelled out so
// GCC vectorises it.
double ShmReducer::reduce_range(const std::vector<float*>& slots, std::size_t lo, std::size_t hi,
                                float scale) {
  const std::size_t K = slots.size();
  if (K == 2) {
    float* __restrict a = slots[0] + lo;
    float* __restrict b = slots[1] + lo;
    return lane_sum<double, 32>(hi - lo, [=](std::size_t i) {
      const float s = (a[i] + b[i]) * scale;
      a[i] = b[i] = s;
      return static_cast<double>(s) * s;
    });
  }
  return lane_sum<double, 32>(hi - lo, [&](std::size_t i) {
    float s = slots[0][lo + i];
    for (std::size_t k = 1; k < K; ++k) s += slots[k][lo + i];
    s *= scale;
    for (std::size_t k = 0; k < K; ++k) slots[k][lo + i] = s;
    return static_cast<double>(s) * s;
  });
}

ShmRange ShmReducer::range_of(std::size_t n, int rank, int size) {
  const std::size_t K = static_cast<std::size_t>(size);
  const std::size_t chunk = round_up((n + K - 1) / K, 16);  // 64-byte aligned ranges
  const std::size_t lo = std::min(n, static_cast<std::size_t>(rank) * chunk);
  return {lo, std::min(n, lo + chunk)};
}

ShmReducer::ShmReducer(MPI_Comm comm) {
  int world = 0;
  LBT_MPI_CHECK(MPI_Comm_size(comm, &world));
  LBT_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_));
  LBT_MPI_CHECK(MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN));
  LBT_MPI_CHECK(MPI_Comm_rank(node_, &rank_));
  LBT_MPI_CHECK(MPI_Comm_size(node_, &size_));
  // Every rank must see the same answer: one node holding them all on each of them.
  int all_here = size_ == world ? 1 : 0;
  LBT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all_here, 1, MPI_INT, MPI_MIN, comm));
  available_ = all_here == 1;
}

ShmReducer::~ShmReducer() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& w : windows_) {
    MPI_Win_unlock_all(w->win);
    MPI_Win_free(&w->win);
  }
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

LentMemory ShmReducer::lend(std::size_t n, bool one_copy) {
  if (!available_ || n == 0) return {};
  long long choice = -1;  // the first window of this kind free and large enough, else a new one
  for (std::size_t i = 0; i < windows_.size() && choice < 0; ++i) {
    const Window& w = *windows_[i];
    if (w.lease.expired() && w.one_copy == one_copy && w.capacity >= n)
      choice = static_cast<long long>(i);
  }
  long long agree[4] = {choice, -choice, static_cast<long long>(n), -static_cast<long long>(n)};
  LBT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, agree, 4, MPI_LONG_LONG, MPI_MAX, node_));
  if (agree[0] != -agree[1] || agree[2] != -agree[3]) {
    throw CommError("ranks asked for gradient memory of different sizes or in a different order (" +
                        std::to_string(n) + " floats on rank " + std::to_string(rank_) + ")",
                    "every rank must build the same model and call gradient_memory alike");
  }
  if (choice < 0) {
    auto w = std::make_unique<Window>();
    w->capacity = round_up(n, 16);
    w->one_copy = one_copy;
    // Slot, then one 64-byte line for the partial norm and one for the bucket counters
    // (shm_bucket_reducer.hpp), in whole pages; OpenMPI puts a header
    // before each rank's memory, so a slot starts at the next 64-byte boundary (the same
    // offset in every process: the window is mapped at page boundaries).
    // One copy: rank 0 holds it all, the others map rank 0's.
    const std::size_t bytes =
        one_copy && rank_ != 0 ? 0 : round_up(w->capacity * sizeof(float) + 3 * 64, kPage);
    MPI_Info info;
    LBT_MPI_CHECK(MPI_Info_create(&info));
    LBT_MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    void* base = nullptr;
    const int rc =
        MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, node_, &base, &w->win);
    MPI_Info_free(&info);
    // Shared memory can run out (a container's small /dev/shm): then every rank keeps its own
    // gradient memory and MPI's allreduce, with one warning. A window that did open on some
    // ranks is left open: freeing it is collective and the others have none to free.
    int opened = rc == MPI_SUCCESS ? 1 : 0;
    LBT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &opened, 1, MPI_INT, MPI_MIN, node_));
    if (!opened) {
      available_ = false;
      if (rank_ == 0) {
        std::fprintf(stderr,
                     "warning: no shared-memory window of %zu bytes per rank (MPI error %d); "
                     "every rank keeps its own gradients and parameters, averaged with "
                     "MPI_Allreduce (slower). A larger /dev/shm (docker --shm-size) restores "
                     "the fast path\n",
                     bytes, rc);
      }
      return {};
    }
    for (int k = 0; k < (one_copy ? 1 : size_); ++k) {
      MPI_Aint size = 0;
      int disp = 0;
      void* ptr = nullptr;
      LBT_MPI_CHECK(MPI_Win_shared_query(w->win, k, &size, &disp, &ptr));
      const std::uintptr_t at = round_up(reinterpret_cast<std::uintptr_t>(ptr), 64);
      const std::size_t used =
          at - reinterpret_cast<std::uintptr_t>(ptr) + w->capacity * sizeof(float) + 2 * 64;
      if (static_cast<std::size_t>(size) < used) {
        throw CommError("MPI_Win_allocate_shared gave rank " + std::to_string(k) + " " +
                        std::to_string(size) + " bytes, fewer than the " + std::to_string(used) +
                        " it needs");
      }
      auto* slot = reinterpret_cast<float*>(at);
      w->slots.push_back(slot);
      w->partials.push_back(reinterpret_cast<double*>(slot + w->capacity));
      w->counters.push_back(reinterpret_cast<std::uint32_t*>(slot + w->capacity + 16));
    }
    LBT_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win));
    windows_.push_back(std::move(w));
    choice = static_cast<long long>(windows_.size() - 1);
  }
  Window& w = *windows_[static_cast<std::size_t>(choice)];
  auto lease = std::make_shared<int>(0);
  w.lease = lease;
  return {std::span<float>(w.slots[one_copy ? 0 : static_cast<std::size_t>(rank_)], n), lease};
}

const ShmReducer::Window* ShmReducer::find(std::span<const float> buf) const {
  for (const auto& w : windows_) {
    if (!w->one_copy && w->slots[static_cast<std::size_t>(rank_)] == buf.data() &&
        buf.size() <= w->capacity)
      return w.get();
  }
  return nullptr;
}

bool ShmReducer::owns(std::span<const float> buf) const {
  return !buf.empty() && find(buf);
}

void ShmReducer::sync(const Window& w) {
  LBT_MPI_CHECK(MPI_Win_sync(w.win));
  LBT_MPI_CHECK(MPI_Barrier(node_));
  LBT_MPI_CHECK(MPI_Win_sync(w.win));
}

double ShmReducer::reduce(std::span<float> buf, ReduceOp op) {
  const Window* w = find(buf);
  if (!w || op == ReduceOp::kMax)
    throw CommError("ShmReducer::reduce: a buffer it did not lend, or kMax");
  const auto [lo, hi] = range_of(buf.size(), rank_, size_);
  const float scale = op == ReduceOp::kAvg ? 1.0f / static_cast<float>(size_) : 1.0f;
  sync(*w);  // every rank's gradient is written
  *w->partials[static_cast<std::size_t>(rank_)] = reduce_range(w->slots, lo, hi, scale);
  sync(*w);  // every range is reduced into every slot
  double total = 0.0;
  for (double* p : w->partials) total += *p;  // rank order: bitwise equal on every rank
  return total;
}

std::unique_ptr<BucketedAllreduce> ShmReducer::bucketed(std::span<float> buf, ReduceOp op,
                                                        std::size_t bucket_floats) {
  const Window* w = find(buf);
  if (!w || op == ReduceOp::kMax)
    throw CommError("ShmReducer::bucketed: a buffer it did not lend, or kMax");
  // Counters start at zero on every rank before any rank's reducing thread reads them.
  ShmBucketReducer::reset_counters(w->counters[static_cast<std::size_t>(rank_)]);
  sync(*w);
  const float scale = op == ReduceOp::kAvg ? 1.0f / static_cast<float>(size_) : 1.0f;
  return std::make_unique<ShmBucketReducer>(
      ShmBucketReducer::Shared{w->slots, w->counters, rank_, buf.size(), scale}, bucket_floats);
}

}  // namespace lbt::comm
