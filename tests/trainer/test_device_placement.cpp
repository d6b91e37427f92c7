// Where a rank steps with model.device=cuda (trainer/device_placement.hpp) and where it sits on
// its machine (trainer/comm/node_ranks.hpp): the launcher's variables believed only when whole
// and in range, the GPU of the local rank's index. How the ranks' gradients meet (NCCL, or the
// host where two ranks hold one GPU) is decided across ranks: tests/comm/test_comm.cpp, under
// mpirun.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "trainer/allreduce_check.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/comm/node_ranks.hpp"
#include "trainer/device_placement.hpp"

using namespace lbt;
using trainer::GradientReduction;

namespace {

// Sets the launcher's variables for one test and puts back what was there.
class LauncherEnv {
 public:
  explicit LauncherEnv(const std::map<std::string, std::string>& values) {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  ~LauncherEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(node_ranks_come_from_openmpi_then_mpich_else_one_machine) {
  {
    LauncherEnv env({});
    const comm::NodeRanks n = comm::node_ranks(5, 8);
    BOOST_TEST(n.local_rank == 5);
    BOOST_TEST(n.local_size == 8);
  }
  {
    LauncherEnv env({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                     {"MPI_LOCALRANKID", "0"},
                     {"MPI_LOCALNRANKS", "2"}});
    const comm::NodeRanks n = comm::node_ranks(5, 8);
    BOOST_TEST(n.local_rank == 1);
    BOOST_TEST(n.local_size == 4);
  }
  {
    LauncherEnv env({{"MPI_LOCALRANKID", "3"}, {"MPI_LOCALNRANKS", "4"}});
    const comm::NodeRanks n = comm::node_ranks(7, 8);
    BOOST_TEST(n.local_rank == 3);
    BOOST_TEST(n.local_size == 4);
  }
}

BOOST_AUTO_TEST_CASE(node_ranks_ignore_values_that_are_not_whole_or_out_of_range) {
  const std::map<std::string, std::string> bad[] = {
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "1x"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},  // rank >= size
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "9"}},  // > world
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "-1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", ""}},
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}}};  // no size
  for (const auto& values : bad) {
    LauncherEnv env(values);
    const comm::NodeRanks n = comm::node_ranks(2, 8);
    BOOST_TEST(n.local_rank == 2);
    BOOST_TEST(n.local_size == 8);
  }
}

BOOST_AUTO_TEST_CASE(each_local_rank_takes_the_gpu_of_its_index_round_robin) {
  BOOST_TEST(trainer::device_for_rank({0, 1}, 8) == 0);
  for (int r = 0; r < 4; ++r) BOOST_TEST(trainer::device_for_rank({r, 4}, 4) == r);
  BOOST_TEST(trainer::device_for_rank({1, 2}, 8) == 1);  // fewer ranks than GPUs: the first
  // More ranks than GPUs: round robin (they then share, and choose_reduction sees it).
  BOOST_TEST(trainer::device_for_rank({1, 2}, 1) == 0);
  BOOST_TEST(trainer::device_for_rank({3, 4}, 2) == 1);
  // Each rank given its own CUDA_VISIBLE_DEVICES sees one GPU: device 0 of its own.
  BOOST_TEST(trainer::device_for_rank({3, 4}, 1) == 0);
  BOOST_CHECK_THROW(trainer::device_for_rank({0, 1}, 0), Error);
}

BOOST_AUTO_TEST_CASE(one_process_has_nothing_to_reduce) {
  comm::LocalCommunicator local;
  const std::byte id[16] = {};
  BOOST_TEST((trainer::choose_reduction(local, id) == GradientReduction::kNone));
  BOOST_TEST(trainer::describe(GradientReduction::kNccl) == "NCCL");
}

BOOST_AUTO_TEST_CASE(a_sweeps_trials_take_the_gpus_in_turn) {
  const char* old = std::getenv("LBT_TRIAL_INDEX");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  unsetenv("LBT_TRIAL_INDEX");
  BOOST_TEST(trainer::device_for_trial(4) == 0);  // not in a sweep
  for (int index : {0, 1, 5, 11}) {
    setenv("LBT_TRIAL_INDEX", std::to_string(index).c_str(), 1);
    BOOST_TEST(trainer::device_for_trial(4) == index % 4);
    BOOST_TEST(trainer::device_for_trial(1) == 0);
  }
  for (const char* bad : {"", "x", "-3", "2.5"}) {
    setenv("LBT_TRIAL_INDEX", bad, 1);
    BOOST_TEST(trainer::device_for_trial(4) == 0, bad);
  }
  BOOST_CHECK_THROW(trainer::device_for_trial(0), Error);
  if (saved)
    setenv("LBT_TRIAL_INDEX", saved->c_str(), 1);
  else
    unsetenv("LBT_TRIAL_INDEX");
}

// The exact-sum check's vectors (trainer/allreduce_check.hpp) by hand: rank r's element i is
// (r + 1)(i mod 13 + 1); over 3 ranks element 12 sums to 13 x 6 = 78, averaged 78 x (1/3) = 26.
BOOST_AUTO_TEST_CASE(the_allreduce_checks_vectors_and_averages_by_hand) {
  const std::vector<float> r2 = trainer::exact_sum_contribution(2, 27);
  BOOST_TEST(r2[0] == 3.0f);
  BOOST_TEST(r2[12] == 39.0f);
  BOOST_TEST(r2[13] == 3.0f);
  BOOST_TEST(trainer::exact_average(12, 3) == 26.0f);
  BOOST_TEST(trainer::exact_average(0, 1) == 1.0f);
  std::vector<float> average(27);
  for (std::size_t i = 0; i < average.size(); ++i) {
    float sum = 0.0f;
    for (int r = 0; r < 3; ++r) sum += trainer::exact_sum_contribution(r, 27)[i];
    average[i] = sum * (1.0f / 3.0f);
  }
  BOOST_TEST(!trainer::first_inexact_element(average, 3).has_value());
  average[20] = std::nextafter(average[20], 100.0f);  // one ulp
  BOOST_TEST(trainer::first_inexact_element(average, 3).value_or(0) == 20u);
}
