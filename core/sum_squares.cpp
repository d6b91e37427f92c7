// Squared norms on the CPU path in use; the copies are in sum_squares_isa.cpp.
#include "core/sum_squares.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt {

#define LBT_DECLARE(NS)                                               \
  namespace NS {                                                      \
  double sum_squares(const float* v, std::size_t n);                  \
  double scale_and_sum_squares(float* v, std::size_t n, float scale); \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

double sum_squares(const float* v, std::size_t n) {
  LBT_CPU_DISPATCH(sum_squares, v, n);
}

double scale_and_sum_squares(float* v, std::size_t n, float scale) {
  LBT_CPU_DISPATCH(scale_and_sum_squares, v, n, scale);
}

}  // namespace lbt
