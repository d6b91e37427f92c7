// NCHW <-> channels-last copies on the CPU path in use (channels_last_isa.cpp, one copy per
// ISA); see channels_last.hpp.
#include "nn/cpu/channels_last.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt::nn {

#define LBT_DECLARE(NS)                                                                          \
  namespace NS {                                                                                 \
  void apply_batch_norm_grad(const BatchNormGradMap& map, const float* g, int C, int hw,         \
                             float* out);                                                        \
  void to_channels_last(const float* x, int C, int h, int w, int p, int hp, int wp,              \
                        std::int64_t count, float* dst, const ChannelAffine* affine,             \
                        const BatchNormGradMap* grad);                                           \
  void from_channels_last(const float* src, int C, int hw, const float* bias,                    \
                          std::int64_t count, float* y, const float* addend, float* moments);    \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

void apply_batch_norm_grad(const BatchNormGradMap& map, const float* g, int C, int hw, float* out) {
  LBT_CPU_DISPATCH(apply_batch_norm_grad, map, g, C, hw, out);
}

void to_channels_last(const float* x, int C, int h, int w, int p, int hp, int wp,
                      std::int64_t count, float* dst, const ChannelAffine* affine,
                      const BatchNormGradMap* grad) {
  LBT_CPU_DISPATCH(to_channels_last, x, C, h, w, p, hp, wp, count, dst, affine, grad);
}

void from_channels_last(const float* src, int C, int hw, const float* bias, std::int64_t count,
                        float* y, const float* addend, float* moments) {
  LBT_CPU_DISPATCH(from_channels_last, src, C, hw, bias, count, y, addend, moments);
}

}  // namespace lbt::nn
