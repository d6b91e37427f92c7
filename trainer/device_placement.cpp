// place_rank and its agreement over the ranks.
#include "trainer/device_placement.hpp"

#include <span>

#include "core/error.hpp"

namespace lbt::trainer {

DevicePlacement place_rank(const comm::NodeRanks& node, int ranks, int devices) {
  if (devices < 1) throw Error("place_rank: no device to place a rank on");
  DevicePlacement p;
  p.device = node.local_rank % devices;
  if (ranks > 1)
    p.reduction = node.local_size > devices ? GradientReduction::kHost : GradientReduction::kNccl;
  return p;
}

DevicePlacement place_on_devices(comm::Communicator& comm, int devices) {
  DevicePlacement p = place_rank(comm::node_ranks(comm.rank(), comm.size()), comm.size(), devices);
  double shares = p.reduction == GradientReduction::kHost ? 1.0 : 0.0;
  comm.allreduce(std::span<double>(&shares, 1), comm::ReduceOp::kMax);
  if (shares > 0) p.reduction = GradientReduction::kHost;
  return p;
}

std::string describe(GradientReduction reduction) {
  switch (reduction) {
    case GradientReduction::kNone:
      return "one rank";
    case GradientReduction::kNccl:
      return "NCCL";
    case GradientReduction::kHost:
      return "the host's communicator (ranks share GPUs)";
  }
  return "?";
}

}  // namespace lbt::trainer
