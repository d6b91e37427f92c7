// Where this process sits on its machine: its index among the ranks the launcher started there
// and their count. The GPU a rank steps on (trainer/device_placement.hpp) and the threads a rank
// takes (experiments/train_run.hpp, default_threads) follow from it.
#pragma once
#include <optional>

namespace lbt::comm {

struct NodeRanks {
  int local_rank = 0;  // 0 .. local_size - 1
  int local_size = 1;
};

// From the launcher's environment: OpenMPI's OMPI_COMM_WORLD_LOCAL_RANK/_LOCAL_SIZE, else MPICH's
// and Intel MPI's MPI_LOCALRANKID/MPI_LOCALNRANKS. Where neither pair is set (or either value is
// not a number in range), every rank is taken to be on one machine: {rank, size}.
NodeRanks node_ranks(int rank, int size);

// The environment variable `name` as a whole number in [low, high], or nothing (unset, empty, not
// a whole number, out of range): how a launcher's variables are read.
std::optional<int> int_from_env(const char* name, long low, long high);

}  // namespace lbt::comm
