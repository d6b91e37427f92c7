// model.device = "cuda" with several ranks (mpirun): which GPU each rank steps on and how the
// ranks' gradients meet. With a GPU per rank NCCL all-reduces them on the GPUs. With more ranks on
// a machine than it has GPUs, ranks share GPUs (two ranks on a one-GPU machine: how the multi-rank
// loop is tested there); NCCL refuses two ranks on one device, so every rank's gradient then goes
// through the host's communicator (MPI) instead.
#pragma once
#include <string>

#include "trainer/comm/communicator.hpp"
#include "trainer/comm/node_ranks.hpp"

namespace lbt::trainer {

enum class GradientReduction {
  kNone,  // one rank: nothing to reduce
  kNccl,  // ncclAllReduce on the GPUs, one rank per GPU
  kHost,  // down to the host, the communicator's allreduce, up again: ranks share GPUs
};

struct DevicePlacement {
  int device = 0;  // the CUDA ordinal this rank steps on
  GradientReduction reduction = GradientReduction::kNone;
};

// This rank's placement from its place on the machine alone: device local_rank mod `devices`;
// NCCL unless the machine's ranks outnumber its GPUs. `devices` >= 1.
DevicePlacement place_rank(const comm::NodeRanks& node, int ranks, int devices);

// place_rank for this process, then agreed by every rank (collective): if any machine's ranks
// share a GPU, every rank reduces through the host, as NCCL needs all of them or none.
DevicePlacement place_on_devices(comm::Communicator& comm, int devices);

// "NCCL", "the host (MPI)", for the line that says where a run steps.
std::string describe(GradientReduction reduction);

}  // namespace lbt::trainer
