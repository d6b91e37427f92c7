// device_for_rank and choose_reduction.
#include "trainer/device_placement.hpp"

#include <limits>
#include <set>
#include <vector>

#include "core/error.hpp"

namespace lbt::trainer {

int device_for_rank(const comm::NodeRanks& node, int devices) {
  if (devices < 1) throw Error("device_for_rank: no device to place a rank on");
  return node.local_rank % devices;
}

int device_for_trial(int devices) {
  if (devices < 1) throw Error("device_for_trial: no device to place a trial on");
  return comm::int_from_env("LBT_TRIAL_INDEX", 0, std::numeric_limits<int>::max()).value_or(0) %
         devices;
}

GradientReduction choose_reduction(comm::Communicator& comm, std::span<const std::byte> device_id) {
  if (comm.size() == 1) return GradientReduction::kNone;
  // Every rank's identity, a byte per float (exact), gathered in rank order.
  constexpr std::size_t kIdFloats = 64;
  if (device_id.size() > kIdFloats) throw Error("choose_reduction: a device id over 64 bytes");
  std::vector<float> mine(kIdFloats, -1.0f);
  for (std::size_t i = 0; i < device_id.size(); ++i)
    mine[i] = static_cast<float>(std::to_integer<unsigned>(device_id[i]));
  std::vector<float> all(kIdFloats * static_cast<std::size_t>(comm.size()));
  comm.allgather(mine, all);
  std::set<std::vector<float>> distinct;
  for (std::size_t r = 0; r < all.size(); r += kIdFloats)
    distinct.emplace(all.begin() + static_cast<std::ptrdiff_t>(r),
                     all.begin() + static_cast<std::ptrdiff_t>(r + kIdFloats));
  return distinct.size() == static_cast<std::size_t>(comm.size()) ? GradientReduction::kNccl
                                                                  : GradientReduction::kHost;
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
