// Synthetic linear regression with a closed-form gradient noise scale (noise tests).
//   x ~ N(0, I_d), w* ~ N(0, I_d), y = x.w* + s*eps, eps ~ N(0, 1); loss 0.5 (x.w - y)^2.
// At parameters w with delta = w - w*: G = delta, Sigma = (|delta|^2 + s^2) I + delta delta^T
// (Isserlis), so tr(Sigma) = (d + 1)|delta|^2 + d s^2 and
//   B_simple = tr(Sigma) / |G|^2 = d (1 + s^2 / |delta|^2) + 1.
#pragma once
#include <cstdint>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace lbt::data {

struct LinearRegressionProblem {
  Dataset data;
  std::vector<float> w_star;  // [d]
  double noise = 0.0;
};

LinearRegressionProblem make_linear_regression(std::int64_t examples, std::int64_t dim,
                                               double noise, std::uint64_t seed);

// Closed form of B_simple at parameters w (see header comment).
double linear_regression_b_simple(const std::vector<float>& w, const std::vector<float>& w_star,
                                  double noise);

}  // namespace lbt::data
