// Combined absolute + relative tolerance (llm.c t_eff, Caffe's max(|a|,|b|,1) scale):
// relative-only checks fail near zero.
#pragma once
#include <cmath>

namespace lbt::test {

inline bool close(double got, double want, double atol, double rtol) {
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

}  // namespace lbt::test
