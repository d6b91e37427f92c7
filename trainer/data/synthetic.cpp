// Synthetic linear regression; see synthetic.hpp.
#include "trainer/data/synthetic.hpp"

#include <limits>
#include <new>
#include <random>

#include "core/rng.hpp"

namespace lbt::data {

LinearRegressionProblem make_linear_regression(std::int64_t examples, std::int64_t dim,
                                               double noise, std::uint64_t seed) {
  LinearRegressionProblem p;
  p.noise = noise;
  auto rng = make_rng(seed, RngStream::kSynthetic);
  std::normal_distribution<double> normal(0.0, 1.0);
  p.w_star.resize(static_cast<std::size_t>(dim));
  for (auto& w : p.w_star) w = static_cast<float>(normal(rng));
  Dataset& d = p.data;
  d.name = "synthetic-regression";
  d.n = examples;
  d.dim = dim;
  d.shape = {dim};
  d.target_dim = 1;
  // examples x dim past int64 wrapped (2^63 - 1 examples): as large as no memory holds.
  if (dim > 0 && examples > std::numeric_limits<std::int64_t>::max() / dim) throw std::bad_alloc();
  d.x.resize(static_cast<std::size_t>(examples * dim));
  d.targets.resize(static_cast<std::size_t>(examples));
  for (std::int64_t i = 0; i < examples; ++i) {
    double y = 0.0;
    for (std::int64_t j = 0; j < dim; ++j) {
      const double x = normal(rng);
      d.x[i * dim + j] = static_cast<float>(x);
      y += x * p.w_star[j];
    }
    d.targets[i] = static_cast<float>(y + noise * normal(rng));
  }
  return p;
}

double linear_regression_b_simple(const std::vector<float>& w, const std::vector<float>& w_star,
                                  double noise) {
  double delta_sq = 0.0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    const double diff = static_cast<double>(w[j]) - w_star[j];
    delta_sq += diff * diff;
  }
  const double d = static_cast<double>(w.size());
  return d * (1.0 + noise * noise / delta_sq) + 1.0;
}

}  // namespace lbt::data
