// Where a rank steps with model.device=cuda (trainer/device_placement.hpp) and where it sits on
// its machine (trainer/comm/node_ranks.hpp): the launcher's variables believed only when whole
// and in range, a GPU per local rank with NCCL, ranks sharing GPUs through the host. The
// agreement across ranks runs under mpirun in tests/comm/test_comm.cpp.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "core/error.hpp"
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

BOOST_AUTO_TEST_CASE(each_local_rank_takes_its_own_gpu_and_nccl_while_there_are_enough) {
  // One rank: device 0, nothing to reduce, however many GPUs.
  const trainer::DevicePlacement one = trainer::place_rank({0, 1}, 1, 8);
  BOOST_TEST(one.device == 0);
  BOOST_TEST((one.reduction == GradientReduction::kNone));
  // Two machines of four GPUs, four ranks each: local rank r on GPU r, NCCL.
  for (int r = 0; r < 4; ++r) {
    const trainer::DevicePlacement p = trainer::place_rank({r, 4}, 8, 4);
    BOOST_TEST(p.device == r);
    BOOST_TEST((p.reduction == GradientReduction::kNccl));
  }
  // Fewer ranks than GPUs: the first ones.
  BOOST_TEST(trainer::place_rank({1, 2}, 2, 8).device == 1);
}

BOOST_AUTO_TEST_CASE(ranks_that_outnumber_the_gpus_share_them_through_the_host) {
  // Two ranks on a one-GPU machine (how the loop's multi-rank path is tested there).
  for (int r = 0; r < 2; ++r) {
    const trainer::DevicePlacement p = trainer::place_rank({r, 2}, 2, 1);
    BOOST_TEST(p.device == 0);
    BOOST_TEST((p.reduction == GradientReduction::kHost));
  }
  // Four ranks on two GPUs: round robin.
  BOOST_TEST(trainer::place_rank({3, 4}, 4, 2).device == 1);
  BOOST_TEST((trainer::place_rank({3, 4}, 4, 2).reduction == GradientReduction::kHost));
  BOOST_CHECK_THROW(trainer::place_rank({0, 1}, 1, 0), Error);
}

BOOST_AUTO_TEST_CASE(one_process_is_placed_on_device_zero_with_nothing_to_reduce) {
  LauncherEnv env({});
  comm::LocalCommunicator local;
  const trainer::DevicePlacement p = trainer::place_on_devices(local, 2);
  BOOST_TEST(p.device == 0);
  BOOST_TEST((p.reduction == GradientReduction::kNone));
}
