// Sampler: permutations per epoch, reproducible by seed, disjoint shards covering the epoch.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/prefetch.hpp"
#include "trainer/data/sampler.hpp"

using namespace lbt;

BOOST_AUTO_TEST_SUITE(sampling)

BOOST_AUTO_TEST_CASE(each_epoch_is_a_permutation_different_across_epochs_same_for_seed) {
  data::ShardedSampler a(1000, 42, 1, 0, 10, 1), b(1000, 42, 1, 0, 10, 1), c(1000, 43, 1, 0, 10, 1);
  auto e0 = a.shard(0), e1 = a.shard(1);
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  BOOST_TEST(sorted == iota);
  BOOST_TEST(e0 != e1);
  BOOST_TEST(e0 == b.shard(0));
  BOOST_TEST(e0 != c.shard(0));
}

BOOST_AUTO_TEST_CASE(shards_are_disjoint_and_cover_the_epoch_with_drop_last) {
  const std::int64_t n = 1003;
  const int world = 4;
  std::set<std::int64_t> seen;
  for (int r = 0; r < world; ++r) {
    data::ShardedSampler s(n, 7, world, r, 5, 2);
    BOOST_TEST(s.per_rank() == n / world);
    for (auto i : s.shard(3)) BOOST_TEST(seen.insert(i).second);  // never seen twice
  }
  BOOST_TEST(seen.size() == static_cast<std::size_t>(n / world * world));
}

BOOST_AUTO_TEST_CASE(k_ranks_cover_the_same_global_batch_as_one_rank_with_k_times_the_batch) {
  // The set of examples in global step s must not depend on how it is split.
  const std::int64_t n = 960, b = 8;
  const int K = 4;
  data::ShardedSampler single(n, 11, 1, 0, K * b, 1), accum(n, 11, 1, 0, b, K);
  for (std::int64_t step :
       {0, 5, 29, 31}) {  // 30 steps per epoch: 29 ends epoch 0, 31 is in epoch 1
    std::vector<std::int64_t> one(K * b), acc, ranks;
    single.micro_batch_indices(step, 0, one.data());
    for (std::int64_t m = 0; m < K; ++m) {
      std::vector<std::int64_t> part(b);
      accum.micro_batch_indices(step, m, part.data());
      acc.insert(acc.end(), part.begin(), part.end());
    }
    for (int r = 0; r < K; ++r) {
      data::ShardedSampler rank(n, 11, K, r, b, 1);
      std::vector<std::int64_t> part(b);
      rank.micro_batch_indices(step, 0, part.data());
      ranks.insert(ranks.end(), part.begin(), part.end());
    }
    std::sort(one.begin(), one.end());
    std::sort(acc.begin(), acc.end());
    std::sort(ranks.begin(), ranks.end());
    BOOST_TEST(one == acc);
    BOOST_TEST(one == ranks);
  }
}

BOOST_AUTO_TEST_CASE(fewer_examples_than_one_batch_is_a_config_error) {
  BOOST_CHECK_THROW(data::ShardedSampler(10, 0, 2, 0, 8, 1), ConfigError);
}

// Both ways of gathering: by next() itself (micro-batches of 4 x 1 floats) and by the thread
// (4 x 4096 floats, over Prefetcher::kInlineBytes).
BOOST_AUTO_TEST_CASE(prefetcher_delivers_the_sampler_sequence_in_order) {
  for (const std::int64_t dim : {1, 4096}) {
    BOOST_TEST((4 * dim * 4 > data::Prefetcher::kInlineBytes) == (dim == 4096));
    data::Dataset d;
    d.n = 64, d.dim = dim, d.num_classes = 64;
    for (int i = 0; i < 64; ++i) {
      for (std::int64_t j = 0; j < dim; ++j) d.x.push_back(static_cast<float>(i + j));
      d.labels.push_back(i);
    }
    data::ShardedSampler reference(64, 5, 1, 0, 4, 2);
    data::Prefetcher prefetch(d, data::ShardedSampler(64, 5, 1, 0, 4, 2), 4, 2, 0);
    for (std::int64_t step = 0; step < 20; ++step) {  // crosses epoch boundaries (8 steps/epoch)
      for (std::int64_t m = 0; m < 2; ++m) {
        const auto& batch = prefetch.next();
        std::int64_t want[4];
        reference.micro_batch_indices(step, m, want);
        BOOST_TEST(batch.step == step);
        for (int i = 0; i < 4; ++i) {
          BOOST_TEST(batch.x[i * dim] == static_cast<float>(want[i]));
          BOOST_TEST(batch.x[i * dim + dim - 1] == static_cast<float>(want[i] + dim - 1));
          BOOST_TEST(batch.labels[i] == want[i]);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
