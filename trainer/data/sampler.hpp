// Epoch-seeded shuffling, sharded across data-parallel ranks with PyTorch DistributedSampler
// semantics (drop-last): each epoch's permutation is cut to a multiple of the world size and
// rank r takes positions r, r + K, r + 2K, ... So the K ranks' micro-batch j of step s together
// cover one contiguous block of the permutation, exactly the block a single process with
// batch K*b (or K accumulation steps of b) would take: data parallelism changes nothing.
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.hpp"

namespace lbt::data {

// Fisher-Yates with Lemire's unbiased bounded draws: the same permutation on every platform.
std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng);

class ShardedSampler {
 public:
  // micro_batch examples per micro-step, accum_steps micro-steps per optimizer step per rank.
  ShardedSampler(std::int64_t n, std::uint64_t seed, int world_size, int rank,
                 std::int64_t micro_batch, std::int64_t accum_steps);

  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::int64_t per_rank() const { return per_rank_; }
  // This rank's shard of epoch `epoch` (drop-last, length per_rank()).
  std::vector<std::int64_t> shard(std::int64_t epoch) const;
  // Indices of micro-batch `micro` of optimizer step `step` (global step count from 0).
  void micro_batch_indices(std::int64_t step, std::int64_t micro, std::int64_t* out);
  // Adaptive batch (the accumulation count changes between steps): the data position is
  // this rank's micro-batch count m from the start; an epoch is per_rank() / micro_batch
  // micro-batches (drop-last), whatever the accumulation.
  std::int64_t micro_batches_per_epoch() const { return per_rank_ / micro_; }
  void stream_indices(std::int64_t m, std::int64_t* out);

 private:
  std::int64_t n_;
  std::uint64_t seed_;
  int world_, rank_;
  std::int64_t micro_, accum_, per_rank_, steps_per_epoch_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> cached_shard_;
  const std::vector<std::int64_t>& epoch_shard(std::int64_t epoch);
};

}  // namespace lbt::data
