// Where this process sits on its machine: its index among the ranks the launcher started there
// and their count. The GPU a rank steps on (trainer/device_placement.hpp) and the threads a rank
// takes (experiments/train_run.hpp, default_threads) follow from it.
#pragma once

namespace lbt::comm {

struct NodeRanks {
  int local_rank = 0;  // 0 .. local_size - 1
  int local_size = 1;
};

// From the launcher's environment: OpenMPI's OMPI_COMM_WORLD_LOCAL_RANK/_LOCAL_SIZE, else MPICH's
// and Intel MPI's MPI_LOCALRANKID/MPI_LOCALNRANKS. Where neither pair is set (or either value is
// not a number in range), every rank is taken to be on one machine: {rank, size}.
NodeRanks node_ranks(int rank, int size);

}  // namespace lbt::comm
