// The Communicator's default gradient allreduce; see communicator.hpp.
#include "trainer/comm/communicator.hpp"

#include "core/sum_squares.hpp"

namespace lbt::comm {

double Communicator::allreduce_sq_norm(std::span<float> buf, ReduceOp op) {
  allreduce(buf, op);
  return sum_squares(buf);
}

namespace {

// No overlap: the whole allreduce when the step asks for the result.
class DeferredAllreduce final : public BucketedAllreduce {
 public:
  DeferredAllreduce(Communicator& comm, std::span<float> buf, ReduceOp op)
      : comm_(comm), buf_(buf), op_(op) {}
  bool overlaps() const override { return false; }
  void ready(std::size_t) override {}
  double finish() override { return comm_.allreduce_sq_norm(buf_, op_); }

 private:
  Communicator& comm_;
  std::span<float> buf_;
  ReduceOp op_;
};

}  // namespace

std::unique_ptr<BucketedAllreduce> Communicator::bucketed_allreduce(std::span<float> buf,
                                                                    ReduceOp op, std::size_t) {
  return std::make_unique<DeferredAllreduce>(*this, buf, op);
}

LentMemory Communicator::gradient_memory(std::size_t) {
  return {};
}

LentMemory Communicator::shared_parameter_memory(std::size_t) {
  return {};
}

}  // namespace lbt::comm
