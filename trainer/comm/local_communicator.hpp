// One process: every collective is the identity (sum/avg/max over a world of one).
#pragma once
#include "trainer/comm/communicator.hpp"

namespace lbt::comm {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend() const override { return "local"; }
  void allreduce(std::span<float>, ReduceOp) override {}
  void allreduce(std::span<double>, ReduceOp) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void allgather(std::span<const float> mine, std::span<float> all) override;
  void barrier() override {}
  [[noreturn]] void abort(int code, std::string_view why) override;
};

}  // namespace lbt::comm
