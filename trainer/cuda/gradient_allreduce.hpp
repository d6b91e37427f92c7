// The step's gradient averaged over the ranks on their GPUs (DeviceStep::allreduce_sq_norm), by
// the reduction device_placement.hpp chose: NCCL on the GPUs, or through the host's communicator
// where ranks share GPUs.
#pragma once
#include <cstddef>
#include <memory>

#include "core/cuda/gpu.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/device_placement.hpp"

namespace lbt::trainer::cuda {

class GradientAllreduce {
 public:
  virtual ~GradientAllreduce() = default;
  // grads := the mean over the ranks of each rank's grads, the same floats on every rank
  // (the sum, then x (1/ranks) in float, as comm::ReduceOp::kAvg on the host).
  virtual void average(float* grads, std::size_t n) = 0;
};

// Collective: every rank calls it with the same reduction. Before it returns, the reduction
// has averaged a vector of whole numbers across the ranks and every rank has checked the result
// against the exact one (trainer/allreduce_check.hpp; a DeviceError naming the first wrong
// element otherwise): code that no multi-GPU machine has run yet checks itself before any run
// relies on it.
std::unique_ptr<GradientAllreduce> make_gradient_allreduce(const lbt::cuda::Gpu& gpu,
                                                           comm::Communicator& comm,
                                                           GradientReduction reduction);

}  // namespace lbt::trainer::cuda
