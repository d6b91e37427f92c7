// trainer/comm under mpirun (2 and 4 ranks): collectives against closed forms with
// rank-dependent inputs (flashlight AllReduceTest), the identical-state check, and the sampler's
// sharding (every index of an epoch on exactly one rank).
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "tolerance.hpp"
#include "trainer/allreduce_check.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/comm/mpi_communicator.hpp"
#include "trainer/data/sampler.hpp"
#include "trainer/device_placement.hpp"

using namespace lbt;

namespace {

comm::Communicator& world() {
  return comm::process_communicator({"mpi"});
}

using Dtypes = boost::mpl::list<float, double>;

// Sizes: empty, one, odd, and one piece past the 8 MiB chunk boundary (as floats).
std::vector<std::size_t> sizes() {
  return {0, 1, 7, 1001, comm::MpiCommunicator::kChunkBytes / sizeof(float) + 3};
}

}  // namespace

BOOST_AUTO_TEST_CASE(launched_by_mpirun_with_the_mpi_backend) {
  BOOST_TEST(comm::launched_by_mpi());
  BOOST_TEST(std::string(world().backend()) == "mpi");
  BOOST_TEST(world().size() >= 2);
  BOOST_TEST(comm::active_communicator() == &world());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(allreduce_matches_closed_forms_for_sum_avg_max, T, Dtypes) {
  auto& c = world();
  const double n = c.size(), r = c.rank();
  for (std::size_t size : sizes()) {
    // element i of rank r holds (r + 1) * (i % 5 + 1): sum n(n+1)/2 * w, avg (n+1)/2 * w, max n * w
    std::vector<T> sum(size), avg(size), max(size);
    for (std::size_t i = 0; i < size; ++i)
      sum[i] = avg[i] = max[i] = static_cast<T>((r + 1) * (i % 5 + 1));
    c.allreduce(std::span<T>(sum), comm::ReduceOp::kSum);
    c.allreduce(std::span<T>(avg), comm::ReduceOp::kAvg);
    c.allreduce(std::span<T>(max), comm::ReduceOp::kMax);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const double w = static_cast<double>(i % 5 + 1);
      const bool ok = test::close(sum[i], n * (n + 1) / 2 * w, 0, 1e-6) &&
                      test::close(avg[i], (n + 1) / 2 * w, 0, 1e-6) &&
                      max[i] == static_cast<T>(n * w);
      if (!ok && bad++ < 3) {
        BOOST_ERROR("size " << size << " element " << i << ": sum " << sum[i] << " avg " << avg[i]
                            << " max " << max[i] << " (w = " << w << ", n = " << n << ")");
      }
    }
    BOOST_TEST(bad == 0u);
  }
}

BOOST_AUTO_TEST_CASE(broadcast_copies_the_roots_bytes_to_every_rank) {
  auto& c = world();
  for (int root : {0, c.size() - 1}) {
    for (std::size_t size :
         {std::size_t{0}, std::size_t{13}, comm::MpiCommunicator::kChunkBytes + 5}) {
      std::vector<std::uint8_t> buf(size);
      for (std::size_t i = 0; i < size; ++i) buf[i] = static_cast<std::uint8_t>(c.rank() * 31 + i);
      c.broadcast(std::as_writable_bytes(std::span(buf)), root);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < size; ++i)
        bad += buf[i] != static_cast<std::uint8_t>(root * 31 + i);
      BOOST_TEST(bad == 0u, "root " << root << " size " << size << ": " << bad << " bytes differ");
    }
  }
}

BOOST_AUTO_TEST_CASE(allgather_orders_blocks_by_rank) {
  auto& c = world();
  const std::vector<float> mine = {static_cast<float>(c.rank()), c.rank() + 0.5f, -1.0f * c.rank()};
  std::vector<float> all(3 * c.size());
  c.allgather(mine, all);
  for (int r = 0; r < c.size(); ++r) {
    BOOST_TEST(all[3 * r] == static_cast<float>(r));
    BOOST_TEST(all[3 * r + 1] == r + 0.5f);
    BOOST_TEST(all[3 * r + 2] == -1.0f * r);
  }
  std::vector<float> wrong(3 * c.size() + 1);
  BOOST_CHECK_THROW(c.allgather(mine, wrong), CommError);  // checked before any message
  c.barrier();
}

BOOST_AUTO_TEST_CASE(identical_state_passes_and_a_differing_rank_fails_everywhere) {
  auto& c = world();
  std::vector<float> same(1000, 0.25f);
  BOOST_CHECK_NO_THROW(comm::check_identical(c, std::as_bytes(std::span(same)), "same"));
  std::vector<float> differ = same;
  if (c.rank() == c.size() - 1) differ[999] = 0.2500001f;  // one ulp-scale change on one rank
  BOOST_CHECK_THROW(comm::check_identical(c, std::as_bytes(std::span(differ)), "differ"),
                    CommError);
}

BOOST_AUTO_TEST_CASE(every_training_index_is_seen_once_per_epoch_across_ranks) {
  auto& c = world();
  for (std::int64_t n : {std::int64_t{1000} * c.size(), std::int64_t{1001} * c.size() + 1}) {
    data::ShardedSampler sampler(n, /*seed=*/7, c.size(), c.rank(), /*micro=*/5, /*accum=*/2);
    std::vector<float> first_epoch;
    for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
      const auto shard = sampler.shard(epoch);
      std::vector<float> mine(shard.begin(), shard.end());  // indices < 2^24: exact in float
      std::vector<float> all(mine.size() * c.size());
      c.allgather(mine, all);
      std::set<std::int64_t> seen;
      for (float v : all) seen.insert(static_cast<std::int64_t>(v));
      // drop-last: n / K per rank, no index twice, all in range
      BOOST_TEST(seen.size() == all.size(), "n " << n << " epoch " << epoch << ": duplicates");
      BOOST_TEST(static_cast<std::int64_t>(all.size()) == n / c.size() * c.size());
      BOOST_TEST(*seen.rbegin() < n);
      if (n % c.size() == 0) BOOST_TEST(static_cast<std::int64_t>(seen.size()) == n);
      if (epoch == 0)
        first_epoch = all;
      else
        BOOST_TEST((all != first_epoch), "epoch 1 repeats epoch 0's order");
    }
  }
}

// Gradient memory (shm_reducer.hpp): every rank of the test shares one node, so the slots are
// lent, and allreduce_sq_norm reduces them in shared memory.
namespace {

// sum over i < size of (i % 5 + 1)^2: 55 per whole cycle of five, then 1, 4, 9, 16.
double sum_of_weights_squared(std::size_t size) {
  double s = 55.0 * static_cast<double>(size / 5);
  for (std::size_t j = 1; j <= size % 5; ++j) s += static_cast<double>(j * j);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lent_gradient_memory_reduces_to_closed_forms_with_the_norm) {
  auto& c = world();
  const double n = c.size(), r = c.rank();
  for (std::size_t size :
       {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{100003}}) {
    for (comm::ReduceOp op : {comm::ReduceOp::kSum, comm::ReduceOp::kAvg}) {
      comm::LentMemory lent = c.gradient_memory(size);
      BOOST_REQUIRE(lent.floats.size() == size);
      BOOST_TEST(reinterpret_cast<std::uintptr_t>(lent.floats.data()) % 64 == 0u);
      std::span<float> g = lent.floats;
      for (std::size_t i = 0; i < size; ++i) g[i] = static_cast<float>((r + 1) * (i % 5 + 1));
      double sq = c.allreduce_sq_norm(g, op);
      const double factor = op == comm::ReduceOp::kSum ? n * (n + 1) / 2 : (n + 1) / 2;
      std::size_t bad = 0;
      for (std::size_t i = 0; i < size; ++i)
        bad += !test::close(g[i], factor * (i % 5 + 1), 0, 1e-6);
      BOOST_TEST(bad == 0u, "size " << size << ": " << bad << " elements differ");
      BOOST_TEST(test::close(sq, factor * factor * sum_of_weights_squared(size), 0, 1e-12));
      // The norm decides divergence on every rank, so it must be bitwise the same.
      double spread[2] = {sq, -sq};
      c.allreduce(std::span<double>(spread, 2), comm::ReduceOp::kMax);
      BOOST_TEST(spread[0] == -spread[1]);
    }
  }
}

BOOST_AUTO_TEST_CASE(gradient_memory_is_never_lent_twice_at_once_and_is_reused_after) {
  auto& c = world();
  comm::LentMemory first = c.gradient_memory(100);
  comm::LentMemory second = c.gradient_memory(100);
  BOOST_TEST(first.floats.data() != second.floats.data());  // two live models never alias
  float* reused = first.floats.data();
  first = {};  // the model that held it is gone
  comm::LentMemory third = c.gradient_memory(50);
  BOOST_TEST(third.floats.data() == reused);
  // An ordinary buffer goes through MPI and gives the same answer.
  std::vector<float> plain(3, static_cast<float>(c.rank() + 1));
  const double sq = c.allreduce_sq_norm(std::span<float>(plain), comm::ReduceOp::kSum);
  const double n = c.size();
  BOOST_TEST(test::close(sq, 3 * (n * (n + 1) / 2) * (n * (n + 1) / 2), 0, 1e-12));
  std::fill(plain.begin(), plain.end(), static_cast<float>(c.rank() + 1));
  const double avg_sq = c.allreduce_sq_norm(std::span<float>(plain), comm::ReduceOp::kAvg);
  BOOST_TEST(test::close(plain[2], (n + 1) / 2, 0, 1e-6));
  BOOST_TEST(test::close(avg_sq, 3 * ((n + 1) / 2) * ((n + 1) / 2), 0, 1e-12));
}

BOOST_AUTO_TEST_CASE(ranks_asking_for_different_gradient_sizes_fail_together) {
  auto& c = world();
  BOOST_CHECK_THROW(c.gradient_memory(10 + static_cast<std::size_t>(c.rank())), CommError);
}

// model.device=cuda under mpirun (trainer/device_placement.hpp), with device ids made up: NCCL
// where every rank holds its own GPU, the host on every rank where any two hold the same one.
BOOST_AUTO_TEST_CASE(gradients_meet_by_nccl_unless_two_ranks_hold_one_gpu) {
  comm::Communicator& c = world();
  auto id = [](int gpu) {
    std::vector<std::byte> uuid(16, std::byte{0xA5});
    uuid[15] = static_cast<std::byte>(gpu);  // 0xA5 ... gpu: a UUID differing in one byte
    return uuid;
  };
  BOOST_TEST((trainer::choose_reduction(c, id(c.rank())) == trainer::GradientReduction::kNccl));
  BOOST_TEST((trainer::choose_reduction(c, id(0)) == trainer::GradientReduction::kHost));
  // The last two ranks on one GPU, the others on their own: still the host, on every rank.
  const int gpu = std::min(c.rank(), c.size() - 2);
  BOOST_TEST((trainer::choose_reduction(c, id(gpu)) == trainer::GradientReduction::kHost));
  // Ids of different lengths are different devices.
  std::vector<std::byte> own = id(0);
  own.resize(static_cast<std::size_t>(8 + c.rank()));
  BOOST_TEST((trainer::choose_reduction(c, own) == trainer::GradientReduction::kNccl));
}

// The exact-sum check every GPU all-reduce across ranks passes first (trainer/allreduce_check.hpp),
// run through MPI's all-reduce (the way ranks sharing a GPU average): its averages are the exact
// ones, past the 8 MiB chunk boundary; one element off on one rank is found, by index.
BOOST_AUTO_TEST_CASE(the_gpu_allreduce_check_passes_mpis_average_and_catches_one_wrong_element) {
  comm::Communicator& c = world();
  const std::size_t n = comm::MpiCommunicator::kChunkBytes / sizeof(float) + 1001;
  std::vector<float> v = trainer::exact_sum_contribution(c.rank(), n);
  c.allreduce(std::span<float>(v), comm::ReduceOp::kAvg);
  BOOST_TEST(!trainer::first_inexact_element(v, c.size()).has_value());
  // Element 7 of the average is 8 (R + 1) / 2 (its pattern value is 8).
  BOOST_TEST(v[7] == 8.0f * static_cast<float>(c.size() + 1) / 2.0f);
  std::vector<float> wrong = trainer::exact_sum_contribution(c.rank(), n);
  if (c.rank() == c.size() - 1) wrong[n - 5] += 1.0f;
  c.allreduce(std::span<float>(wrong), comm::ReduceOp::kAvg);
  const auto at = trainer::first_inexact_element(wrong, c.size());
  BOOST_TEST_REQUIRE(at.has_value());
  BOOST_TEST(*at == n - 5);
}
