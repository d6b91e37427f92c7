// Compute threads per rank where train.threads = 0 (experiments/train_run.hpp): the cores the
// task may use, at most the machine's cores over its ranks, at least one.
#include <boost/test/unit_test.hpp>

#include "experiments/train_run.hpp"

using lbt::experiments::threads_per_rank;

BOOST_AUTO_TEST_SUITE(default_threads)

BOOST_AUTO_TEST_CASE(the_cores_a_rank_may_use_bound_the_threads) {
  BOOST_TEST(threads_per_rank(16, 16, 1) == 16);  // one process, unpinned
  BOOST_TEST(threads_per_rank(4, 16, 1) == 4);    // taskset -c 0-3, a cgroup's 4 cores
  BOOST_TEST(threads_per_rank(16, 16, 4) == 4);   // mpirun --bind-to none -np 4
  BOOST_TEST(threads_per_rank(1, 16, 2) == 1);    // mpirun -np 2 binds each rank to a core
  BOOST_TEST(threads_per_rank(8, 16, 4) == 4);    // -np 4 bound to sockets of 8: two per socket
  BOOST_TEST(threads_per_rank(4, 128, 4) == 4);   // srun --cpus-per-task=4 on a large node
  BOOST_TEST(threads_per_rank(2, 2, 4) == 1);     // more ranks than cores: one thread each
  BOOST_TEST(threads_per_rank(2, 2, 0) == 2);     // no rank count: the machine's
}

BOOST_AUTO_TEST_SUITE_END()
