// BatchNorm's plane loops on the CPU path in use (batch_norm_planes_isa.cpp, one copy per ISA);
// see batch_norm_planes.hpp.
#include "nn/cpu/batch_norm_planes.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt::nn::bn_planes {

#define LBT_DECLARE(NS)                                                                          \
  namespace NS {                                                                                 \
  void shifted_sums(const float* p, std::int64_t n, float shift, float* lanes);                  \
  void grad_sums(const float* p, const float* dy, std::int64_t n, float mean, float scale,       \
                 float shift, bool relu, float* lanes);                                          \
  void affine(const float* p, float scale, float shift, const float* r, float r_scale,           \
              float r_shift, bool relu, std::int64_t n, float* y);                               \
  void mask_by_positive(const float* out, const float* dy, std::int64_t n, float* m);            \
  void input_grad(const float* p, const float* dy, std::int64_t n, float k, float a, float b,    \
                  float mean, bool relu, float scale, float shift, float* dx);                   \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

void shifted_sums(const float* p, std::int64_t n, float shift, float* lanes) {
  LBT_CPU_DISPATCH(shifted_sums, p, n, shift, lanes);
}

void grad_sums(const float* p, const float* dy, std::int64_t n, float mean, float scale,
               float shift, bool relu, float* lanes) {
  LBT_CPU_DISPATCH(grad_sums, p, dy, n, mean, scale, shift, relu, lanes);
}

void affine(const float* p, float scale, float shift, const float* r, float r_scale,
            float r_shift, bool relu, std::int64_t n, float* y) {
  LBT_CPU_DISPATCH(affine, p, scale, shift, r, r_scale, r_shift, relu, n, y);
}

void mask_by_positive(const float* out, const float* dy, std::int64_t n, float* m) {
  LBT_CPU_DISPATCH(mask_by_positive, out, dy, n, m);
}

void input_grad(const float* p, const float* dy, std::int64_t n, float k, float a, float b,
                float mean, bool relu, float scale, float shift, float* dx) {
  LBT_CPU_DISPATCH(input_grad, p, dy, n, k, a, b, mean, relu, scale, shift, dx);
}

}  // namespace lbt::nn::bn_planes
