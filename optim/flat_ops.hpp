// Internal loop helpers for the fused optimizer kernels. A step's segments are cut into
// chunks and the whole plan runs in one OpenMP parallel region: a region per segment cost a
// thread wake-up each, which at 1M parameters in 10 segments was half the step
// (bench/optim_step.cpp). Chunk boundaries depend only on segment sizes and sums over chunks
// are combined per segment in chunk order, so a norm does not depend on the thread count
// (checkpoint-resume stays bitwise).
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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

// Which thread runs each chunk: the plan's elements cut into equal shares, one per thread, and
// each chunk run by the thread whose share holds its middle element. Chunks are not alike (a
// segment's last one is short, a bias is one short chunk), so OpenMP's static schedule, equal
// chunk counts, left the MLP 784-512-512-10's second thread 2/3 of the first's work; this split
// is within half a chunk of even, and, unlike a round-robin or least-loaded one, keeps each
// thread's memory contiguous (those ran the momentum step 20% slower on 10 equal segments).
inline std::vector<int> assign_chunks(const std::vector<Chunk>& plan, int threads) {
  std::size_t total = 0;
  for (const Chunk& c : plan) total += c.end - c.begin;
  std::vector<int> owner(plan.size());
  std::size_t before = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::size_t size = plan[i].end - plan[i].begin, middle = before + size / 2;
    owner[i] = static_cast<int>(middle * static_cast<std::size_t>(threads) / total);
    before += size;
  }
  return owner;
}

// Calls body(i) for each chunk index i of the plan: in one parallel region when the plan holds
// more than a chunk's worth of elements, else serially (a tiny model is not worth a wake-up).
// Each chunk's work does not depend on the thread that runs it, so neither do the results.
template <class Body>
void for_each_chunk(const std::vector<Chunk>& plan, Body&& body) {
  std::size_t elements = 0;
  for (const Chunk& c : plan) elements += c.end - c.begin;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (elements <= kChunk || threads == 1) {
    for (std::size_t i = 0; i < plan.size(); ++i) body(i);
    return;
  }
  const std::vector<int> owner = assign_chunks(plan, threads);
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    for (std::size_t i = 0; i < plan.size(); ++i)
      if (owner[i] == me) body(i);
  }
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

// Layer-wise methods (LARS, LAMB) make two passes: per-segment norms, then the update that
// needs them. Run pass-major (every segment's norms, then every update) the update reads the
// parameters again from L3 or memory; run group by group, a thread's share of a group is still
// in its L2 cache when the update reads it (at 1M parameters in 10 segments, LARS went from
// 0.20 to 0.14 ms a step and LAMB from 0.28 to 0.22 ms, bench/optim_step.cpp). A group is one
// segment or a run of consecutive small ones.
struct GroupPlan {
  std::vector<Chunk> chunks;               // in segment order
  std::vector<std::size_t> group_begin;    // chunk index where each group starts, + chunks.size()
  std::vector<std::size_t> segment_begin;  // first chunk of each segment, + chunks.size()
  std::size_t elements = 0;
};

// Elements a group may hold per thread so that a thread's share of four parameter-sized arrays
// (LAMB: w, g, m, v) stays inside a 1 MiB L2 between the passes.
inline constexpr std::size_t kGroupPerThread = std::size_t{1} << 15;

// Segments are cut into equal chunks of at most kChunk elements (a multiple of 16, so chunks
// start on 64-byte boundaries), their count rounded up to a multiple of 4 when the segment has
// at least 16K elements, so 2 or 4 threads share a group evenly. Depends on sizes only.
// With OMP_WAIT_POLICY=passive every barrier puts the waiting thread to sleep (tens of
// microseconds to wake it), more than a group saves: then the whole step is one group.
inline GroupPlan plan_groups(std::span<const Segment> segments,
                             int threads = omp_get_max_threads()) {
  static const bool passive = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    return policy && (policy[0] == 'p' || policy[0] == 'P');
  }();
  GroupPlan plan;
  const std::size_t group_limit =
      passive ? SIZE_MAX : kGroupPerThread * static_cast<std::size_t>(std::max(threads, 1));
  std::size_t in_group = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::size_t size = segments[s].size;
    if (plan.group_begin.empty() || in_group + size > group_limit) {
      plan.group_begin.push_back(plan.chunks.size());
      in_group = 0;
    }
    in_group += size;
    plan.elements += size;
    plan.segment_begin.push_back(plan.chunks.size());
    std::size_t pieces = std::max<std::size_t>(1, (size + kChunk - 1) / kChunk);
    if (size >= (std::size_t{1} << 14)) pieces = (pieces + 3) / 4 * 4;
    const std::size_t piece = ((size + pieces - 1) / pieces + 15) / 16 * 16;
    for (std::size_t begin = 0; begin < size; begin += piece)
      plan.chunks.push_back({s, begin, std::min(size, begin + piece)});
  }
  plan.group_begin.push_back(plan.chunks.size());
  plan.segment_begin.push_back(plan.chunks.size());
  return plan;
}

// For each group: norms(chunk) -> std::array<double, K> over the group's chunks, then
// update(chunk, sums) with `sums` the K totals of the chunk's segment. A static schedule hands
// each thread the same chunks in both passes (same loop length, same region), which is what
// keeps them in its cache; one barrier per group. Every thread adds a segment's chunk sums
// itself, in chunk order, so no second barrier is needed and the totals are the same on all.
template <std::size_t K, class Norms, class Update>
void norms_then_update(const GroupPlan& plan, Norms&& norms, Update&& update) {
  std::vector<std::array<double, K>> parts(plan.chunks.size());
  auto totals = [&](std::size_t segment) {
    std::array<double, K> sum{};
    for (std::size_t i = plan.segment_begin[segment]; i < plan.segment_begin[segment + 1]; ++i)
      for (std::size_t k = 0; k < K; ++k) sum[k] += parts[i][k];
    return sum;
  };
  const std::size_t groups = plan.group_begin.size() - 1;
#pragma omp parallel if (plan.elements > kChunk)
  for (std::size_t g = 0; g < groups; ++g) {
    const auto first = static_cast<std::ptrdiff_t>(plan.group_begin[g]);
    const auto last = static_cast<std::ptrdiff_t>(plan.group_begin[g + 1]);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = first; i < last; ++i)
      parts[static_cast<std::size_t>(i)] = norms(plan.chunks[static_cast<std::size_t>(i)]);
#pragma omp for schedule(static) nowait
    for (std::ptrdiff_t i = first; i < last; ++i) {
      const Chunk& c = plan.chunks[static_cast<std::size_t>(i)];
      update(c, totals(c.segment));
    }
  }
}

}  // namespace lbt::optim::detail
