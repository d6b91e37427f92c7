// Internal loop helpers for the fused optimizer kernels. A step's segments are cut into
// fixed-size chunks and the whole plan runs in one OpenMP parallel region: a region per
// segment cost a thread wake-up each, which at 1M parameters in 10 segments was half the step
// (bench/optim_step.cpp). Sums over chunks are combined per segment in chunk order, so a norm
// does not depend on the thread count (checkpoint-resume stays bitwise).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "core/params.hpp"

namespace lbt::optim::detail {

// 64K floats = 256 KiB per chunk: big enough to amortise scheduling, small enough to balance.
inline constexpr std::size_t kChunk = std::size_t{1} << 16;

// [begin, end) of segment `segment`, relative to the segment's offset.
struct Chunk {
  std::size_t segment, begin, end;
};

// The chunks of the segments that select(segment) keeps, in segment order.
template <class Select>
std::vector<Chunk> plan_chunks(std::span<const Segment> segments, Select&& select) {
  std::vector<Chunk> plan;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    if (!select(segments[s])) continue;
    for (std::size_t begin = 0; begin < segments[s].size; begin += kChunk) {
      plan.push_back({s, begin, std::min(segments[s].size, begin + kChunk)});
    }
  }
  return plan;
}

inline std::vector<Chunk> plan_chunks(std::span<const Segment> segments) {
  return plan_chunks(segments, [](const Segment&) { return true; });
}

// Calls body(i) for each chunk index i of the plan: in one parallel region when the plan holds
// more than a chunk's worth of elements, else serially (a tiny model is not worth a wake-up).
template <class Body>
void for_each_chunk(const std::vector<Chunk>& plan, Body&& body) {
  std::size_t elements = 0;
  for (const Chunk& c : plan) elements += c.end - c.begin;
  const auto n = static_cast<std::ptrdiff_t>(plan.size());
  if (elements <= kChunk) {
    for (std::ptrdiff_t i = 0; i < n; ++i) body(static_cast<std::size_t>(i));
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) body(static_cast<std::size_t>(i));
}

// K sums per segment: partial(chunk) returns the K partial sums of one chunk; the result has
// one entry per segment (zeros for segments the plan skips).
template <std::size_t K, class Partial>
std::vector<std::array<double, K>> sum_chunks(const std::vector<Chunk>& plan,
                                              std::size_t num_segments, Partial&& partial) {
  std::vector<std::array<double, K>> parts(plan.size());
  for_each_chunk(plan, [&](std::size_t i) { parts[i] = partial(plan[i]); });
  std::vector<std::array<double, K>> total(num_segments, std::array<double, K>{});
  for (std::size_t i = 0; i < plan.size(); ++i)
    for (std::size_t k = 0; k < K; ++k) total[plan[i].segment][k] += parts[i][k];
  return total;
}

}  // namespace lbt::optim::detail
