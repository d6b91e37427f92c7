// Squared norms, compiled once per ISA (cmake/isa_sources.cmake); see sum_squares.hpp.
#include <cstddef>

#include "core/sum_squares.hpp"

namespace lbt::LBT_ISA_NS {

double sum_squares(const float* v, std::size_t n) {
  return lane_sum<double, 32>(n, [v](std::size_t i) {
    const double x = v[i];
    return x * x;
  });
}

double scale_and_sum_squares(float* v, std::size_t n, float scale) {
  return lane_sum<double, 32>(n, [v, scale](std::size_t i) {
    const double x = v[i] *= scale;
    return x * x;
  });
}

}  // namespace lbt::LBT_ISA_NS
