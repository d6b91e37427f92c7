// The sharded optimizer step's ranges and state gather; see sharded_step.hpp.
#include "trainer/sharded_step.hpp"

#include <algorithm>
#include <cstddef>
#include <span>

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

namespace {

// Zeroed outside `mine`, then summed over the ranks: the whole buffer on every rank.
void gather_range(std::span<float> v, comm::Communicator& comm, ParamRange mine) {
  std::fill(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mine.begin), 0.0f);
  std::fill(v.begin() + static_cast<std::ptrdiff_t>(mine.end), v.end(), 0.0f);
  comm.allreduce(v, comm::ReduceOp::kSum);
}

}  // namespace

// Buffers not laid out like the parameters (not n floats) are the same everywhere.
void gather_sharded_state(optim::Optimizer& optimizer, comm::Communicator& comm, std::size_t n,
                          ParamRange mine) {
  for (auto& [name, buffer] : optimizer.state().buffers())
    if (buffer.size() == n) gather_range(buffer.span(), comm, mine);
}

void gather_sharded_buffers(std::vector<std::vector<float>>& buffers, comm::Communicator& comm,
                            std::size_t n, ParamRange mine) {
  for (std::vector<float>& buffer : buffers)
    if (buffer.size() == n) gather_range(buffer, comm, mine);
}

}  // namespace lbt::trainer
