// GradientAllreduce by NCCL or through the host, and the exact-sum check both pass first.
#include "trainer/cuda/gradient_allreduce.hpp"

#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "trainer/allreduce_check.hpp"

namespace lbt::trainer::cuda {
namespace {

class NcclAllreduce final : public GradientAllreduce {
 public:
  NcclAllreduce(const lbt::cuda::Gpu& gpu, comm::Communicator& comm)
      : gpu_(gpu), ranks_(comm.size()), nccl_(unique_id(comm), comm.size(), comm.rank()) {}

  void average(float* grads, std::size_t n) override {
    nccl_.allreduce_sum(gpu_, grads, n);
    gpu_.scale(grads, 1.0f / static_cast<float>(ranks_), n);
  }

 private:
  // Rank 0's id, broadcast by the host's communicator: the ranks' bootstrap.
  static std::vector<std::byte> unique_id(comm::Communicator& comm) {
    std::vector<std::byte> id = comm.rank() == 0
                                    ? lbt::cuda::nccl_unique_id()
                                    : std::vector<std::byte>(lbt::cuda::kNcclUniqueIdBytes);
    comm.broadcast(id, 0);
    return id;
  }

  const lbt::cuda::Gpu& gpu_;
  const int ranks_;
  lbt::cuda::NcclCommunicator nccl_;
};

// Ranks that share a GPU: down, the host communicator's average, up again.
class HostAllreduce final : public GradientAllreduce {
 public:
  explicit HostAllreduce(comm::Communicator& comm) : comm_(comm) {}

  void average(float* grads, std::size_t n) override {
    host_.resize(n);
    lbt::cuda::copy_to_host(host_.data(), grads, n * sizeof(float));
    comm_.allreduce(std::span<float>(host_), comm::ReduceOp::kAvg);
    lbt::cuda::copy_to_device(grads, host_.data(), n * sizeof(float));
  }

 private:
  comm::Communicator& comm_;
  std::vector<float> host_;
};

// trainer/allreduce_check.hpp's vectors, 4M floats, so NCCL splits them into chunks and
// channels as it does a model's gradient.
void check_exact_sum(GradientAllreduce& reduce, comm::Communicator& comm) {
  constexpr std::size_t kCount = std::size_t{1} << 22;
  const std::vector<float> mine = exact_sum_contribution(comm.rank(), kCount);
  lbt::cuda::DeviceArray<float> on_device{std::span<const float>(mine)};
  reduce.average(on_device.data(), kCount);
  const std::vector<float> got = on_device.download();
  if (const auto i = first_inexact_element(got, comm.size()))
    throw DeviceError("the GPUs' gradient all-reduce over " + std::to_string(comm.size()) +
                          " ranks is wrong at element " + std::to_string(*i) + ": " +
                          std::to_string(got[*i]) + " instead of " +
                          std::to_string(exact_average(*i, comm.size())) +
                          ": lbt trains nothing on these GPUs",
                      "run one rank per machine, or model.device=cpu; report the message");
}

}  // namespace

std::unique_ptr<GradientAllreduce> make_gradient_allreduce(const lbt::cuda::Gpu& gpu,
                                                           comm::Communicator& comm,
                                                           GradientReduction reduction) {
  std::unique_ptr<GradientAllreduce> reduce;
  if (reduction == GradientReduction::kNccl)
    reduce = std::make_unique<NcclAllreduce>(gpu, comm);
  else if (reduction == GradientReduction::kHost)
    reduce = std::make_unique<HostAllreduce>(comm);
  else
    throw Error("make_gradient_allreduce: one rank has nothing to reduce");
  check_exact_sum(*reduce, comm);
  return reduce;
}

}  // namespace lbt::trainer::cuda
