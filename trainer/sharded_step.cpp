// The sharded optimizer step's ranges and state gather; see sharded_step.hpp.
#include "trainer/sharded_step.hpp"

#include <algorithm>

namespace lbt::trainer {

ParamRange rank_range(std::size_t n, int world, int rank) {
  const auto K = static_cast<std::size_t>(std::max(world, 1));
  const std::size_t chunk = ((n + K - 1) / K + 15) / 16 * 16;
  const std::size_t begin = std::min(n, static_cast<std::size_t>(rank) * chunk);
  return {begin, std::min(n, begin + chunk)};
}

std::vector<Segment> clip_segments(const std::vector<Segment>& segments, ParamRange range) {
  std::vector<Segment> clipped;
  for (const Segment& s : segments) {
    const std::size_t begin = std::max(s.offset, range.begin);
    const std::size_t end = std::min(s.offset + s.size, range.end);
    if (begin >= end) continue;
    Segment part = s;
    part.offset = begin;
    part.size = end - begin;
    clipped.push_back(std::move(part));
  }
  return clipped;
}

void gather_sharded_state(optim::Optimizer& optimizer, comm::Communicator& comm, std::size_t n,
                          ParamRange mine) {
  for (auto& [name, buffer] : optimizer.state().buffers()) {
    if (buffer.size() != n) continue;  // not laid out like the parameters: the same everywhere
    float* v = buffer.data();
    std::fill(v, v + mine.begin, 0.0f);
    std::fill(v + mine.end, v + n, 0.0f);
    comm.allreduce(buffer.span(), comm::ReduceOp::kSum);
  }
}

}  // namespace lbt::trainer
