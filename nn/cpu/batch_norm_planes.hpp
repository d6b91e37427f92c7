// BatchNorm's passes over one plane (one image's channel, n values), the hot loops of
// batch_norm.cpp, compiled once per ISA (batch_norm_planes_isa.cpp) and run on the CPU path in
// use (core/cpu_path.hpp). Sums are left in 16 float lanes each, unreduced: on the 8x8 planes
// of ResNet's last stage a horizontal sum per plane cost more than the additions.
#pragma once
#include <cstdint>

namespace lbt::nn::bn_planes {

// lanes[0..16) and lanes[16..32): the plane's sums of d = p - shift and of d^2.
void shifted_sums(const float* p, std::int64_t n, float shift, float* lanes);

// lanes[0..16) and [16..32): sums of g and of g (p - mean), with g = dy, or with relu dy where
// fma(p, scale, shift) > 0 (the forward's ReLU passed, the same bits as affine()).
void grad_sums(const float* p, const float* dy, std::int64_t n, float mean, float scale,
               float shift, bool relu, float* lanes);

// The forward's y = fma(p, scale, shift) (+ fma(r, r_scale, r_shift) when r is not null), then
// max(., 0) with relu; a NaN stays NaN.
void affine(const float* p, float scale, float shift, const float* r, float r_scale, float r_shift,
            bool relu, std::int64_t n, float* y);

// m = dy where out > 0, else 0 (the ReLU after a residual sum).
void mask_by_positive(const float* out, const float* dy, std::int64_t n, float* m);

// dx = k fma(mean - p, b, g - a) = k (g - a - (p - mean) b), g = dy or, with relu, dy where
// fma(p, scale, shift) > 0.
void input_grad(const float* p, const float* dy, std::int64_t n, float k, float a, float b,
                float mean, bool relu, float scale, float shift, float* dx);

}  // namespace lbt::nn::bn_planes
