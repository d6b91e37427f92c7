// What the MPI suites in tests/comm share: the world communicator and a small MLP run on
// Fashion-MNIST (784-32-10, 2048 examples, 20 steps at global batch 64, one thread per rank).
#pragma once
#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "trainer/comm/communicator.hpp"

namespace lbt::test {

inline comm::Communicator& world() {
  return comm::process_communicator({"mpi"});
}

inline constexpr std::int64_t kGlobalBatch = 64;  // divisible by 2 and 4 ranks

inline Config small_mpi_run(const std::string& optimizer) {
  Config c = Config::from_string(R"(
[model]
spec = "mlp:784-32-10"
[data]
dataset = "fashion-mnist"
path = "/usr/share/datasets/fashion-mnist"
train_limit = 2048
validation_size = 256
[train]
steps = 20
eval_every = 20
log_every = 10
threads = 1
seed = 3
[optimizer]
lr = 0.05
)",
                                 "small_mpi_run");
  c.set("optimizer.name=" + optimizer);
  c.set("train.global_batch=" + std::to_string(kGlobalBatch));
  return c;
}

}  // namespace lbt::test
