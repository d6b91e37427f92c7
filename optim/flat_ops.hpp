// Internal loop helpers for the fused optimizer kernels: fixed-size chunks run in parallel
// with OpenMP when a segment is large, and sums over chunks are combined in chunk order, so a
// norm does not depend on the thread count (checkpoint-resume stays bitwise).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace lbt::optim::detail {

// 64K floats = 256 KiB per chunk: big enough to amortise scheduling, small enough to balance.
inline constexpr std::size_t kChunk = std::size_t{1} << 16;

// Calls body(begin, end) over [0, n) in kChunk pieces; parallel when there is more than one.
template <class Body>
void for_chunks(std::size_t n, Body&& body) {
  const std::ptrdiff_t chunks = static_cast<std::ptrdiff_t>((n + kChunk - 1) / kChunk);
  if (chunks <= 1) {
    body(std::size_t{0}, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
    body(begin, std::min(n, begin + kChunk));
  }
}

// K sums over [0, n): partial(begin, end) returns the K partial sums of one chunk; chunks are
// combined in order, so the result is the same for any thread count.
template <std::size_t K, class Partial>
std::array<double, K> sum_chunks(std::size_t n, Partial&& partial) {
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) return partial(std::size_t{0}, n);
  std::vector<std::array<double, K>> parts(chunks);
  for_chunks(n, [&](std::size_t begin, std::size_t end) { parts[begin / kChunk] = partial(begin, end); });
  std::array<double, K> total{};
  for (const auto& p : parts)
    for (std::size_t k = 0; k < K; ++k) total[k] += p[k];
  return total;
}

}  // namespace lbt::optim::detail
