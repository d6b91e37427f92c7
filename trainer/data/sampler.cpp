// Sharded epoch sampler; see sampler.hpp.
#include "trainer/data/sampler.hpp"

#include "core/error.hpp"

namespace lbt::data {
namespace {

// Uniform draw in [0, bound) (Lemire 2019, "Fast random integer generation in an interval").
std::uint64_t bounded(Rng& rng, std::uint64_t bound) {
  __uint128_t m = static_cast<__uint128_t>(rng()) * bound;
  std::uint64_t low = static_cast<std::uint64_t>(m);
  if (low < bound) {
    const std::uint64_t threshold = -bound % bound;
    while (low < threshold) {
      m = static_cast<__uint128_t>(rng()) * bound;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

}  // namespace

std::vector<std::int64_t> permutation(std::int64_t n, Rng& rng) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[i] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    std::swap(p[i], p[bounded(rng, static_cast<std::uint64_t>(i + 1))]);
  }
  return p;
}

ShardedSampler::ShardedSampler(std::int64_t n, std::uint64_t seed, int world_size, int rank,
                               std::int64_t micro_batch, std::int64_t accum_steps)
    : n_(n),
      seed_(seed),
      world_(world_size),
      rank_(rank),
      micro_(micro_batch),
      accum_(accum_steps) {
  per_rank_ = n_ / world_;
  steps_per_epoch_ = per_rank_ / (micro_ * accum_);
  if (steps_per_epoch_ < 1) {
    throw ConfigError("the training set has " + std::to_string(n_) +
                          " examples, fewer than one global batch of " +
                          std::to_string(micro_ * accum_ * world_),
                      "lower train.global_batch or use more training data");
  }
}

std::vector<std::int64_t> ShardedSampler::shard(std::int64_t epoch) const {
  auto rng = make_rng(seed_, RngStream::kSampler, static_cast<std::uint64_t>(epoch));
  std::vector<std::int64_t> perm = permutation(n_, rng);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(per_rank_));
  for (std::int64_t i = 0; i < per_rank_; ++i) mine[i] = perm[rank_ + i * world_];
  return mine;
}

void ShardedSampler::micro_batch_indices(std::int64_t step, std::int64_t micro, std::int64_t* out) {
  const std::vector<std::int64_t>& mine = epoch_shard(step / steps_per_epoch_);
  const std::int64_t start = ((step % steps_per_epoch_) * accum_ + micro) * micro_;
  for (std::int64_t i = 0; i < micro_; ++i) out[i] = mine[start + i];
}

void ShardedSampler::stream_indices(std::int64_t m, std::int64_t* out) {
  const std::int64_t per_epoch = micro_batches_per_epoch();
  const std::vector<std::int64_t>& mine = epoch_shard(m / per_epoch);
  const std::int64_t start = (m % per_epoch) * micro_;
  for (std::int64_t i = 0; i < micro_; ++i) out[i] = mine[start + i];
}

const std::vector<std::int64_t>& ShardedSampler::epoch_shard(std::int64_t epoch) {
  if (epoch != cached_epoch_) {
    cached_shard_ = shard(epoch);
    cached_epoch_ = epoch;
  }
  return cached_shard_;
}

}  // namespace lbt::data
