// model.device = "cuda" with several ranks (mpirun): which GPU each rank steps on and how the
// ranks' gradients meet. With a GPU per rank NCCL all-reduces them on the GPUs. Where two ranks
// hold the same GPU (more ranks on a machine than it has GPUs; two ranks on a one-GPU machine
// is how the multi-rank loop is tested there), NCCL refuses them, so every rank's gradient goes
// through the host's communicator (MPI) instead.
#pragma once
#include <cstddef>
#include <span>
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

// The GPU a rank takes among the `devices` (>= 1) its process sees: local rank mod devices. A
// launcher that gives each rank its own CUDA_VISIBLE_DEVICES leaves one: device 0.
int device_for_rank(const comm::NodeRanks& node, int devices);

// One process started by lbt sweep: the GPU of its trial's place in the plan, LBT_TRIAL_INDEX
// mod `devices` (>= 1), so a sweep's concurrent trials spread over a machine's GPUs; 0 where
// the variable is not a whole number >= 0.
int device_for_trial(int devices);

// Collective: kNone for one rank; else kNccl unless two ranks' devices have the same identity
// (`device_id`: the GPU's UUID, the same bytes on every rank that holds that GPU, at most 64),
// then kHost on every rank (NCCL needs all of them or none).
GradientReduction choose_reduction(comm::Communicator& comm, std::span<const std::byte> device_id);

// "NCCL", "the host's communicator (ranks share GPUs)", for the line that says where a run steps.
std::string describe(GradientReduction reduction);

}  // namespace lbt::trainer
