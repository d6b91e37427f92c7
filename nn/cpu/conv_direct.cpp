// Direct convolution: the geometry and weight layouts, and the kernels of the CPU path in use
// (conv_direct_isa.cpp and conv_direct_planes_isa.cpp, one copy per ISA); see conv_direct.hpp.
#include "nn/cpu/conv_direct.hpp"

#include "core/cpu_dispatch.hpp"

namespace lbt::nn::conv_direct {
namespace {

std::size_t round_up(std::size_t n, std::size_t m) {
  return (n + m - 1) / m * m;
}

}  // namespace

#define LBT_DECLARE(NS)                                                                          \
  namespace NS {                                                                                 \
  void forward(const float* xp, const Geometry& g, const float* wt, int out, float* yp);         \
  void weight_grad_lanes(const float* dyq, int out_channels, const float* xp, const Geometry& g,  \
                         float* lanes);                                                          \
  void arrange_input_grad_stride2(const float* w, int out, int in, float* wf);                   \
  std::size_t input_grad_stride2_scratch(const Geometry& g, int out_channels);                   \
  void input_grad_stride2(const float* dy, const Geometry& g, int out_channels, const float* wf, \
                          float* scratch, float* dx);                                            \
  void reduce_lanes(const float* const* lanes, int parts, std::size_t n, bool accumulate,        \
                    float* dw);                                                                  \
  void pad_planes(const float* x, const Geometry& g, float* xp);                                 \
  void unpad_planes(const float* yp, const Geometry& g, const float* bias, float* y,             \
                    float* moments);                                                             \
  const float* prepare_dy(const float* dy, const Geometry& g, int out_channels, float* dst,      \
                          const BatchNormGradMap* map);                                          \
  }
LBT_FOR_EACH_ISA(LBT_DECLARE)
#undef LBT_DECLARE

std::size_t Geometry::out_len() const {
  return round_up(static_cast<std::size_t>(out_h()) * row(), 16);
}

std::size_t Geometry::plane() const {
  const int rows = stride == 1 ? h + k - 1 : h / 2 + 1;
  return round_up(static_cast<std::size_t>(rows) * row() + 32 + k, 16);
}

std::size_t Geometry::offset(int t) const {
  const int u = t / k, v = t % k;
  if (stride == 1) return static_cast<std::size_t>(u) * row() + v;
  return static_cast<std::size_t>((u % 2) * 3 + v) * plane() +
         static_cast<std::size_t>(u / 2) * row();
}

bool supports(int kernel, int stride, int padding, int out_channels, int h, int w) {
  const bool same = (kernel == 3 || kernel == 5) && stride == 1 && padding == kernel / 2;
  const bool down = kernel == 3 && stride == 2 && padding == 1 && h % 2 == 0 && w % 2 == 0;
  return (same || down) && out_channels > 0 && out_channels % 8 == 0;
}

void arrange_forward(const float* w, int out, int in, int k, float* wt) {
  const int T = k * k;
  for (int o = 0; o < out; ++o)
    for (int c = 0; c < in; ++c)
      for (int t = 0; t < T; ++t)
        wt[(static_cast<std::size_t>(c) * T + t) * out + o] =
            w[(static_cast<std::size_t>(o) * in + c) * T + t];
}

void arrange_input_grad(const float* w, int out, int in, int k, float* wf) {
  const int T = k * k;
  for (int o = 0; o < out; ++o)
    for (int c = 0; c < in; ++c)
      for (int t = 0; t < T; ++t)
        wf[(static_cast<std::size_t>(o) * T + t) * in + c] =
            w[(static_cast<std::size_t>(o) * in + c) * T + (T - 1 - t)];
}

void forward(const float* xp, const Geometry& g, const float* wt, int out, float* yp) {
  LBT_CPU_DISPATCH(forward, xp, g, wt, out, yp);
}

void weight_grad_lanes(const float* dyq, int out_channels, const float* xp, const Geometry& g,
                       float* lanes) {
  LBT_CPU_DISPATCH(weight_grad_lanes, dyq, out_channels, xp, g, lanes);
}

void arrange_input_grad_stride2(const float* w, int out, int in, float* wf) {
  LBT_CPU_DISPATCH(arrange_input_grad_stride2, w, out, in, wf);
}

std::size_t input_grad_stride2_scratch(const Geometry& g, int out_channels) {
  LBT_CPU_DISPATCH(input_grad_stride2_scratch, g, out_channels);
}

void input_grad_stride2(const float* dy, const Geometry& g, int out_channels, const float* wf,
                        float* scratch, float* dx) {
  LBT_CPU_DISPATCH(input_grad_stride2, dy, g, out_channels, wf, scratch, dx);
}

void reduce_lanes(const float* const* lanes, int parts, std::size_t n, bool accumulate, float* dw) {
  LBT_CPU_DISPATCH(reduce_lanes, lanes, parts, n, accumulate, dw);
}

void pad_planes(const float* x, const Geometry& g, float* xp) {
  LBT_CPU_DISPATCH(pad_planes, x, g, xp);
}

void unpad_planes(const float* yp, const Geometry& g, const float* bias, float* y, float* moments) {
  LBT_CPU_DISPATCH(unpad_planes, yp, g, bias, y, moments);
}

const float* prepare_dy(const float* dy, const Geometry& g, int out_channels, float* dst,
                        const BatchNormGradMap* map) {
  LBT_CPU_DISPATCH(prepare_dy, dy, g, out_channels, dst, map);
}

}  // namespace lbt::nn::conv_direct
