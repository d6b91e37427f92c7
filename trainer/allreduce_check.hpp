// The exact-sum check a gradient all-reduce across ranks passes before a run relies on it
// (trainer/cuda/gradient_allreduce.hpp: NCCL, or through the host, written before any
// multi-GPU machine ran it). Plain C++, so the CPU's tests run the check's arithmetic through
// the host communicator under mpirun.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace lbt::trainer {

// Rank r's n floats: element i is (r + 1)(i mod 13 + 1), whole numbers whose sum over R ranks
// every float adds exactly in any order (while R (R + 1) / 2 x 13 < 2^24: R up to ~1600).
std::vector<float> exact_sum_contribution(int rank, std::size_t n);

// The first element of `average` that is not the ranks' sum x (1/ranks) in float (as
// comm::ReduceOp::kAvg and the GPUs' all-reduce form it), or nothing.
std::optional<std::size_t> first_inexact_element(std::span<const float> average, int ranks);

// The expected element i of the average over `ranks`.
float exact_average(std::size_t i, int ranks);

}  // namespace lbt::trainer
