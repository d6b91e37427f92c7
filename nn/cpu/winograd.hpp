// Winograd minimal-filtering convolution (Lavin & Gray 2016, "Fast Algorithms for Convolutional
// Neural Networks", eq. 8: Y = A^T [(G g G^T) . (B^T d B)] A) for "same" convolutions: stride 1,
// padding r/2, 4x4 output tiles:
//   r = 3: F(4x4, 3x3) on 6x6 input tiles, points 0, +-1, +-2 and infinity: 36 multiplies per
//          16 outputs instead of 144 (ResNet's 3x3 layers)
//   r = 5: F(4x4, 5x5) on 8x8 input tiles, points 0, +-1, +-2, +-1/2 and infinity: 64 per 16
//          instead of 400 (the simple CNN's 5x5 layer); the points are those of F(6x6, 3x3)
//          (NNPACK), whose float rounding stays near 1e-6 of the outputs' scale (tests).
// The matrices come from the Toom-Cook construction (Lavin's wincnn); the data and output
// transforms are written out from them, the filter transform G is computed from the points.
// Images whose sides are not multiples of 4 are covered by whole tiles over zero padding.
//
// Layout: per image group, the transformed input V[xi][tile][channel] and the products
// M[xi][tile][out channel], so that each of the alpha^2 tile positions xi is one GEMM
// M_xi = V_xi U_xi over channels; the transforms are vectorised over 16 channels, on images
// copied to channels-last (channels_last.hpp) with zero borders.
//   forward:        y = conv(x, W)                 U[xi][in][out] = G W[o][c] G^T
//   input gradient: dx = conv(dy, W flipped, channels swapped)  (the same routine)
//   weight grad.:   dU[xi][in][out] = sum over tiles of V_x[tile][c] (A dy_tile A^T)[tile][o],
//                   then dW[o][c] = G^T dU[c][o] G (the chain rule through eq. 8).
// Channel counts must be multiples of 16.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"
#include "nn/cpu/channels_last.hpp"

namespace lbt::nn::winograd {

inline constexpr int kTile = 4;           // output tile side
inline constexpr int kChannelBlock = 16;  // channels per vector

// One convolution: in_c -> out_c channels on h x w images (outputs h x w too), r x r kernel.
struct Shape {
  int in_c = 0, out_c = 0, h = 0, w = 0, r = 3;
  int alpha() const { return kTile + r - 1; }  // input tile side
  int positions() const { return alpha() * alpha(); }
  int tiles_h() const { return (h + kTile - 1) / kTile; }
  int tiles_w() const { return (w + kTile - 1) / kTile; }
  int tiles() const { return tiles_h() * tiles_w(); }  // per image
  // The channels-last copy: r/2 zero rows (columns) before the image, enough after it for
  // whole tiles.
  int padded_h() const { return tiles_h() * kTile + r - 1; }
  int padded_w() const { return tiles_w() * kTile + r - 1; }
};

// True when this convolution runs here: kernel 3 or 5, stride 1, padding kernel/2, channel
// counts multiples of 16.
bool supports(int kernel, int stride, int padding, int in_c, int out_c, int h, int w);

// Floats in the transformed weights of a layer: alpha^2 matrices of in x out, each followed by
// 16 floats of padding.
std::size_t transformed_size(int r, int in, int out);
// u[xi][in][out] = G w[o][c] G^T from w[out][in][r*r] (PyTorch layout). With `input_grad`,
// the input gradient's filters instead: u[xi][out][in] = G flip(w[o][c]) G^T.
void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u);
// dw[out][in][r*r] (+)= G^T du[xi][c][o] G, from du[xi][in][out].
void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,
                                  float* dw);

// Scratch for one thread; grows on first use and is reused.
struct Workspace {
  AlignedBuffer padded, dy, v, m, out;
};

// Images per call that keep one call's transformed tiles (alpha^2 x tiles x channels floats,
// twice) and images within a 1 MiB L2 (2048 tile-channels; 4096 measured slower on ResNet-8).
std::int64_t group_size(const Shape& s);

// y[n] = conv(x[n]) + bias (bias may be null) for `count` NCHW images; u from
// transform_weights(..., input_grad = false) for s, or (input_grad = true) for the input
// gradient, with s.in_c / s.out_c swapped.
// x_affine (may be null): x's channels through that map first (channels_last.hpp).
// y_moments (may be null; then bias must be): y's per-plane moments, [count][3][s.out_c]
// (from_channels_last).
void convolve(const Shape& s, const float* x, std::int64_t count, const float* u, const float* bias,
              float* y, Workspace& ws, const ChannelAffine* x_affine = nullptr,
              float* y_moments = nullptr);

// du[xi][in][out] += the transformed weight gradient of `count` images x and output
// gradients dy (NCHW).
// dy_map (may be null): dy is the gradient at a BatchNorm's output, read through that map
// (its x from these images too); the output gradient is the BatchNorm's input gradient.
void accumulate_weight_grad(const Shape& s, const float* x, const float* dy, std::int64_t count,
                            float* du, Workspace& ws, const ChannelAffine* x_affine = nullptr,
                            const BatchNormGradMap* dy_map = nullptr);

// dx[n] = conv(dy[n], W flipped, channels swapped) (+ dx_addend[n], which may be dx) for the
// output gradients that the last accumulate_weight_grad call left in ws (channels-last,
// padded); u from transform_weights(..., input_grad = true).
void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u, float* dx,
                                  Workspace& ws, const float* dx_addend = nullptr);

}  // namespace lbt::nn::winograd
