// The host's GradientReader: the estimator's loops over the flat gradient buffer.
#include "noise/gradient_reader.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace lbt::noise {

namespace {

// sum_{i in [begin, end)} term(i) in double with 32 independent partial sums: a single
// accumulator chain waits on the add latency each element (1.6x slower on this machine).
template <class Term>
double lane_sum(std::size_t begin, std::size_t end, Term&& term) {
  constexpr std::size_t kLanes = 32;
  double lanes[kLanes] = {};
  std::size_t i = begin;
  for (; i + kLanes <= end; i += kLanes) {
#pragma omp simd
    for (std::size_t k = 0; k < kLanes; ++k) lanes[k] += term(i + k);
  }
  double sum = 0.0;
  for (; i < end; ++i) sum += term(i);
  for (double lane : lanes) sum += lane;
  return sum;
}

// sum_{i < n} term(i): one thread up to 4M elements (a thread wake-up costs more than it saves
// below that: with both changes the MLP's two-batch hook went from 0.31 to 0.07 ms a step,
// bench/noise_overhead.cpp), else fixed 1M blocks in parallel, combined in block order so the
// result does not depend on the thread count.
template <class Term>
double sum_over(std::size_t n, Term&& term) {
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  if (n <= 4 * kBlock) return lane_sum(0, n, term);
  const auto blocks = static_cast<std::ptrdiff_t>((n + kBlock - 1) / kBlock);
  std::vector<double> partial(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
    partial[static_cast<std::size_t>(b)] = lane_sum(begin, std::min(n, begin + kBlock), term);
  }
  return std::accumulate(partial.begin(), partial.end(), 0.0);
}

}  // namespace

void HostGradientReader::segment_sq_norms(std::span<double> out) {
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const float* p = grads_.data() + segments_[s].offset;
    out[s] = sum_over(segments_[s].size, [p](std::size_t i) {
      const double x = p[i];
      return x * x;
    });
  }
}

// One fused pass reads the buffer and p and stores the buffer as the next p (the last call
// skips the store; the first reads no p: it is 0).
void HostGradientReader::segment_change_sq_norms(std::span<double> out, bool first, bool last) {
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const float* cur = grads_.data() + segments_[s].offset;
    float* prev = previous_ + segments_[s].offset;
    if (first) {
      out[s] = sum_over(segments_[s].size, [cur, prev](std::size_t i) {
        prev[i] = cur[i];
        const double d = cur[i];
        return d * d;
      });
    } else if (last) {
      out[s] = sum_over(segments_[s].size, [cur, prev](std::size_t i) {
        const double d = cur[i] - prev[i];
        return d * d;
      });
    } else {
      out[s] = sum_over(segments_[s].size, [cur, prev](std::size_t i) {
        const double d = cur[i] - prev[i];
        prev[i] = cur[i];
        return d * d;
      });
    }
  }
}

}  // namespace lbt::noise
