// The shared-memory gradient allreduce (shm_reducer.hpp) in buckets, overlapped with backward
// (train.overlap_comm; PyTorch DDP's gradient buckets, Li et al. 2020, arXiv:2006.15704, §3.2).
//
// Bucket k holds elements [k x bucket, (k + 1) x bucket) of the flat gradient; backward finishes
// the buffer from its end, so buckets are posted last to first. The main thread posts a bucket
// by raising its rank's `posted` counter; each rank's reducing thread waits until every rank
// has posted it, reduces its share of it exactly as ShmReducer::reduce does each element (sum
// in rank order, times scale, written into every slot) and raises its `done` counter. finish()
// waits for every rank's `done`, then sums the squares over reduce()'s ranges in its order, so
// the result and the norm are bitwise those of the non-overlapped reduce().
//
// The counters live in the window (one 64-byte line per rank) and are waited on with futexes,
// which work across processes on shared mappings: a waiting thread sleeps, leaving its core to
// the ranks' compute (two ranks on two cores have none to spare).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "trainer/comm/communicator.hpp"

namespace lbt::comm {

class ShmBucketReducer final : public BucketedAllreduce {
 public:
  // What the window shares: every rank's slot and counters [posted, done], this rank, the
  // buffer's length n and the reduction's scale (1 or 1/K).
  struct Shared {
    std::vector<float*> slots;
    std::vector<std::uint32_t*> counters;
    int rank = 0;
    std::size_t n = 0;
    float scale = 1.0f;
  };
  // Zeroes this rank's counters; the caller then synchronises every rank before any reads.
  static void reset_counters(std::uint32_t* counters);

  // bucket_floats: a multiple of 16 (64-byte aligned buckets), at least 16.
  ShmBucketReducer(Shared shared, std::size_t bucket_floats);
  ~ShmBucketReducer() override;  // stops and joins the reducing thread
  ShmBucketReducer(const ShmBucketReducer&) = delete;
  ShmBucketReducer& operator=(const ShmBucketReducer&) = delete;

  bool overlaps() const override { return true; }
  void ready(std::size_t from) override;
  double finish() override;

 private:
  void post(std::size_t buckets);  // this step's first `buckets` buckets (from the end) posted
  void reduce_loop();              // the reducing thread
  void reduce_share(std::size_t bucket);
  double norm_as_reduce() const;

  const Shared shared_;
  const std::size_t bucket_, num_buckets_;
  std::uint32_t step_base_ = 0;  // buckets posted before this step (every rank's the same)
  std::size_t posted_ = 0;       // buckets of this step posted
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

}  // namespace lbt::comm
