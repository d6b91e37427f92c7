// Winograd minimal-filtering convolution (Lavin & Gray 2016, "Fast Algorithms for Convolutional
// Neural Networks", eq. 8: Y = A^T [(G g G^T) . (B^T d B)] A) for "same" convolutions: stride 1,
// padding r/2, on 6x6 input tiles with the interpolation points 0, 1, -1, 2, -2 and infinity.
//   r = 3: F(4x4, 3x3), 36 multiplies per 16 outputs instead of 144 (ResNet's 3x3 layers)
//   r = 5: F(2x2, 5x5), 36 multiplies per 4 outputs instead of 100 (the simple CNN's 5x5 layer)
// Both share the same data transform B^T; only G and A^T depend on r.
//
// Layout: per image group, the transformed input V[36][tile][channel] and the products
// M[36][tile][out channel], so that each of the 36 tile positions is one GEMM
// M_xi = V_xi U_xi over channels; the transforms are vectorised over 16 channels, on images
// transposed to channels-last (height, width, channel) with zero borders.
//   forward:        y = conv(x, W)                 U[36][in][out] = G W[o][c] G^T
//   input gradient: dx = conv(dy, W flipped, channels swapped)  (the same routine)
//   weight grad.:   dU[36][in][out] = sum over tiles of V_x[tile][c] (A dy_tile A^T)[tile][o],
//                   then dW[o][c] = G^T dU[c][o] G (the chain rule through eq. 8).
// Channel counts must be multiples of 16 and the output a whole number of m x m tiles.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace lbt::nn::winograd {

inline constexpr int kAlpha = 6;          // input tile side
inline constexpr int kPositions = 36;     // kAlpha^2 transformed positions
inline constexpr int kChannelBlock = 16;  // channels per vector

// One convolution: in_c -> out_c channels on h x w images (outputs h x w too), r x r kernel.
struct Shape {
  int in_c = 0, out_c = 0, h = 0, w = 0, r = 3;
  int m() const { return r == 3 ? 4 : 2; }             // output tile side
  int tiles() const { return (h / m()) * (w / m()); }  // per image
  int padded_h() const { return h + r - 1; }
  int padded_w() const { return w + r - 1; }
};

// True when this convolution runs here: kernel 3 or 5, stride 1, padding kernel/2, channel
// counts multiples of 16 and h, w multiples of the output tile (4 for 3x3, 2 for 5x5).
bool supports(int kernel, int stride, int padding, int in_c, int out_c, int h, int w);

// u[36][in][out] = G w[o][c] G^T from w[out][in][r*r] (PyTorch layout). With `input_grad`,
// the input gradient's filters instead: u[36][out][in] = G flip(w[o][c]) G^T.
void transform_weights(const float* w, int out, int in, int r, bool input_grad, float* u);
// dw[out][in][r*r] (+)= G^T du[xi][c][o] G, from du[36][in][out].
void weight_grad_from_transformed(const float* du, int out, int in, int r, bool accumulate,
                                  float* dw);

// Scratch for one thread; grows on first use and is reused.
struct Workspace {
  AlignedBuffer padded, dy, v, m, out;
};

// Images per call that keep one call's transformed tiles (36 x tiles x channels floats,
// twice) and images within a 1 MiB L2 (2048 tile-channels; 4096 measured slower on ResNet-8).
std::int64_t group_size(const Shape& s);

// y[n] = conv(x[n]) + bias (bias may be null) for `count` NCHW images; u from
// transform_weights(..., input_grad = false) for s, or (input_grad = true) for the input
// gradient, with s.in_c / s.out_c swapped.
void convolve(const Shape& s, const float* x, std::int64_t count, const float* u, const float* bias,
              float* y, Workspace& ws);

// du[36][in][out] += the transformed weight gradient of `count` images x and output
// gradients dy (NCHW).
void accumulate_weight_grad(const Shape& s, const float* x, const float* dy, std::int64_t count,
                            float* du, Workspace& ws);

// dx[n] = conv(dy[n], W flipped, channels swapped) for the output gradients that the last
// accumulate_weight_grad call left in ws (channels-last, padded); u from transform_weights(...,
// input_grad = true).
void input_grad_after_weight_grad(const Shape& s, std::int64_t count, const float* u, float* dx,
                                  Workspace& ws);

}  // namespace lbt::nn::winograd
