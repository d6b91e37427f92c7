// The sharded optimizer step of data-parallel ranks on one node (ZeRO stage 1, Rajbhandari et
// al. 2020, without the gradient partitioning): the parameters live once per node in memory
// every rank maps (Communicator::shared_parameter_memory), each rank applies an elementwise
// optimizer to its own range of them, and a barrier ends the step. Each rank's optimizer state
// is current on its range only; checkpoints gather it first.
#pragma once
#include <cstddef>
#include <vector>

#include "core/params.hpp"
#include "optim/optimizer.hpp"
#include "trainer/comm/communicator.hpp"

namespace lbt::trainer {

struct ParamRange {
  std::size_t begin = 0, end = 0;  // [begin, end) of the flat buffer
};

// Rank r's range of n parameters among K: ceil(n / K) rounded up to 16 floats (64-byte
// aligned starts), the last rank taking what is left (possibly nothing).
ParamRange rank_range(std::size_t n, int world, int rank);

// The segment table clipped to `range`: segments outside it dropped, the others cut to their
// overlap with it, offsets still into the whole flat buffer; flags kept.
std::vector<Segment> clip_segments(const std::vector<Segment>& segments, ParamRange range);

// Makes every flat state buffer of `optimizer` (those of n floats) whole on every rank: each
// rank zeroes it outside its range, then one sum allreduce. Collective.
void gather_sharded_state(optim::Optimizer& optimizer, comm::Communicator& comm, std::size_t n,
                          ParamRange mine);
// The same for a snapshot's copy of those buffers (ModelSnapshot::optimizer_buffers).
void gather_sharded_buffers(std::vector<std::vector<float>>& buffers, comm::Communicator& comm,
                            std::size_t n, ParamRange mine);

}  // namespace lbt::trainer
