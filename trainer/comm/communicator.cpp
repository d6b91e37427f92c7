// The Communicator's default gradient allreduce; see communicator.hpp.
#include "trainer/comm/communicator.hpp"

#include "core/sum_squares.hpp"

namespace lbt::comm {

double Communicator::allreduce_sq_norm(std::span<float> buf, ReduceOp op) {
  allreduce(buf, op);
  return sum_squares(buf);
}

LentMemory Communicator::gradient_memory(std::size_t) {
  return {};
}

LentMemory Communicator::shared_parameter_memory(std::size_t) {
  return {};
}

}  // namespace lbt::comm
