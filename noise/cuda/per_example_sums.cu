// CudaPerExampleSums; see per_example_sums.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/error.hpp"
#include "noise/cuda/per_example_sums.hpp"
#include "noise/per_example_rule.hpp"

namespace lbt::noise::cuda {
namespace {

constexpr int kThreads = 256;

// Thread n: example n's shares (per_example_rule.hpp's add_example_row).
__global__ void example_shares_kernel(const float* x, const float* dy, std::int64_t batch,
                                      std::int64_t in, std::int64_t out, double inv_scale_sq,
                                      double* rows) {
  const std::int64_t n = blockIdx.x * std::int64_t{kThreads} + threadIdx.x;
  if (n >= batch) return;
  double weight = 0.0, bias = 0.0;
  add_example_row(x, dy, n, in, out, inv_scale_sq, weight, bias);
  rows[2 * n] = weight;
  rows[2 * n + 1] = bias;
}

// One thread: the examples' shares added in order.
__global__ void sum_rows_kernel(const double* rows, std::int64_t batch, double* sums) {
  double weight = 0.0, bias = 0.0;
  for (std::int64_t n = 0; n < batch; ++n) weight += rows[2 * n], bias += rows[2 * n + 1];
  sums[0] = weight;
  sums[1] = bias;
}

}  // namespace

CudaPerExampleSums::CudaPerExampleSums(std::int64_t max_batch)
    : rows_(static_cast<std::size_t>(2 * max_batch)), sums_(2) {}

double CudaPerExampleSums::add(std::span<const LinearTap> taps, std::int64_t batch,
                               double grad_scale, std::span<double> segment_sums) {
  if (2 * static_cast<std::size_t>(batch) > rows_.size())
    throw Error("per-example sums: batch " + std::to_string(batch) + " over the GPU's largest");
  const double inv_scale_sq = 1.0 / (grad_scale * grad_scale);
  double total = 0.0;
  for (const LinearTap& t : taps) {
    const auto blocks = static_cast<unsigned>((batch + kThreads - 1) / kThreads);
    example_shares_kernel<<<blocks, kThreads>>>(t.x, t.dy, batch, t.in, t.out, inv_scale_sq,
                                                rows_.data());
    lbt::cuda::check(cudaGetLastError(), "example_shares_kernel");
    sum_rows_kernel<<<1, 1>>>(rows_.data(), batch, sums_.data());
    lbt::cuda::check(cudaGetLastError(), "sum_rows_kernel");
    const std::vector<double> sums = sums_.download();
    segment_sums[t.weight_segment] += sums[0];
    total += sums[0];
    if (t.bias_segment >= 0) {
      segment_sums[static_cast<std::size_t>(t.bias_segment)] += sums[1];
      total += sums[1];
    }
  }
  return total;
}

}  // namespace lbt::noise::cuda
