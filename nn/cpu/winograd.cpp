// Winograd convolution: which convolutions it computes, and the kernels of the CPU path in use
// (winograd_isa.cpp, one copy per ISA); see winograd.hpp.
#include "nn/cpu/winograd.hpp"

#include <algorithm>

#include "core/cpu_dispatch.hpp"

namespace lbt::nn::winograd {

#define LBT_DECLARE(NS)                                                                          \
  namespace NS {                                                                                 \
  std::size_t transformed_size(int r, int in, int out);                                          \
  void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u);     \
  void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,    \
                                    float* dw);                                                  \
  void convolve(const Shape& s, const float* x, std::int64_t count, const float* u,              \
                const float* bias, float* y, Workspace& ws, const ChannelAffine* x_affine,       \
                float* y_moments);                                                               \
  void accumulate_weight_grad(const Shape& s, const float* x, const float* dy,                   \
                              std::int64_t count, float* du, Workspace& ws,                      \
                              const ChannelAffine* x_affine, const BatchNormGradMap* dy_map);    \
  void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u,          \
                                    float* dx, Workspace& ws, const float* dx_addend);           \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

bool supports(int kernel, int stride, int padding, int in_c, int out_c, int h, int w) {
  return (kernel == 3 || kernel == 5) && stride == 1 && padding == kernel / 2 && in_c > 0 &&
         out_c > 0 && in_c % kChannelBlock == 0 && out_c % kChannelBlock == 0 && h > 0 && w > 0;
}

std::int64_t group_size(const Shape& s) {
  const std::int64_t per_image = static_cast<std::int64_t>(s.tiles()) * std::max(s.in_c, s.out_c);
  return std::max<std::int64_t>(1, 2048 / per_image);
}

std::size_t transformed_size(int r, int in, int out) {
  LBT_CPU_DISPATCH(transformed_size, r, in, out);
}

void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u) {
  LBT_CPU_DISPATCH(transform_weights, w, out, in, r, input_grad, u);
}

void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,
                                  float* dw) {
  LBT_CPU_DISPATCH(weight_grad_from_transformed, du, out, in, r, accumulate, dw);
}

void convolve(const Shape& s, const float* x, std::int64_t count, const float* u, const float* bias,
              float* y, Workspace& ws, const ChannelAffine* x_affine, float* y_moments) {
  LBT_CPU_DISPATCH(convolve, s, x, count, u, bias, y, ws, x_affine, y_moments);
}

void accumulate_weight_grad(const Shape& s, const float* x, const float* dy, std::int64_t count,
                            float* du, Workspace& ws, const ChannelAffine* x_affine,
                            const BatchNormGradMap* dy_map) {
  LBT_CPU_DISPATCH(accumulate_weight_grad, s, x, dy, count, du, ws, x_affine, dy_map);
}

void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u, float* dx,
                                  Workspace& ws, const float* dx_addend) {
  LBT_CPU_DISPATCH(input_grad_after_weight_grad, s, count, u, dx, ws, dx_addend);
}

}  // namespace lbt::nn::winograd
