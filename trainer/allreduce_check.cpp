// The exact-sum check's contributions and expected averages.
#include "trainer/allreduce_check.hpp"

namespace lbt::trainer {
namespace {

int pattern(std::size_t i) {
  return static_cast<int>(i % 13 + 1);
}

}  // namespace

std::vector<float> exact_sum_contribution(int rank, std::size_t n) {
  std::vector<float> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = static_cast<float>((rank + 1) * pattern(i));
  return mine;
}

float exact_average(std::size_t i, int ranks) {
  const auto sum = static_cast<float>(pattern(i) * ranks * (ranks + 1) / 2);
  return sum * (1.0f / static_cast<float>(ranks));
}

std::optional<std::size_t> first_inexact_element(std::span<const float> average, int ranks) {
  for (std::size_t i = 0; i < average.size(); ++i)
    if (average[i] != exact_average(i, ranks)) return i;
  return std::nullopt;
}

}  // namespace lbt::trainer
