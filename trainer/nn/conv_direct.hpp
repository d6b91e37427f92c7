// Direct "same" convolution (stride 1, odd kernel K in {3, 5}, padding K/2) without im2col.
//
// An image is copied once into planes with zero borders, each padded row `wp = w + K - 1`
// floats long. Output pixel (i, j) then sits at q = i * wp + j, and its window tap (u, v) reads
// the padded plane at q + u * wp + v: one constant offset per tap for every pixel. So the
// convolution is a sum of K*K shifted copies of the planes, vectorised over runs of q that
// cross row ends (the K - 1 columns q lands on past each row end are computed and thrown
// away). No column matrix is written or packed: for ResNet's 16- to 64-channel layers those
// copies cost more than the multiply-adds (bench/cnn_step.cpp).
//   forward:        y = conv(x, W)                      (register-blocked, 8 output channels)
//   input gradient: dx = conv(dy, W flipped, channels swapped)   (the same kernel)
//   weight grad.:   dW[o][c][t] = sum_q dy[o][q] x[c][q + offset(t)]   (lane partial sums)
#pragma once
#include <cstddef>
#include <cstdint>

namespace lbt::nn::conv_direct {

struct Geometry {
  int channels = 0, h = 0, w = 0, k = 0;
  int pad() const { return k / 2; }
  int row() const { return w + k - 1; }  // padded row length
  // Output positions computed per channel (h rows of row() floats), rounded up to 32.
  std::size_t out_len() const;
  // Floats per padded plane: (h + k - 1) padded rows plus slack that the last vectors and the
  // largest tap offset may read (zeros), rounded to 16 floats (64 bytes).
  std::size_t plane() const;
};

// True when lbt's direct path computes this convolution: stride 1, padding K/2, K in {3, 5},
// and `out_channels` a multiple of 8 (the kernel's register block).
bool supports(int kernel, int stride, int padding, int out_channels);

// xp[c][plane] = x[c][h][w] inside zero borders (borders and slack are written too).
void pad_planes(const float* x, const Geometry& g, float* xp);
// y[o][i][j] = yp[o][i * row + j] + (bias ? bias[o] : 0) for the valid j < w.
void unpad_planes(const float* yp, const Geometry& g, const float* bias, float* y);

// Weights [out][in][K*K] (PyTorch layout) rearranged for forward(): wt[in][t][out].
void arrange_forward(const float* w, int out, int in, int k, float* wt);
// ...and for the input gradient: wf[out][t][in] = w[out][in][K*K - 1 - t] (taps flipped).
void arrange_input_grad(const float* w, int out, int in, int k, float* wf);

// yp[o][q] for o < out, q < g.out_len(): sum over c < g.channels and taps t of
// wt[c][t][o] * xp[c][q + offset(t)]. xp is pad_planes() output of geometry g.
void forward(const float* xp, const Geometry& g, const float* wt, int out, float* yp);

// lanes[o][c][t][16] += 16 partial sums of dyp[o][q] * xp[c][q + offset(t)] over q: the weight
// gradient before its lanes are added up (reduce_lanes), so that adding up happens once per
// batch rather than once per image. dyp points at a padded plane of dy shifted to q = 0
// (pad_planes(dy) + pad * row + pad), so positions past a row end read zero borders.
void weight_grad_lanes(const float* dyp, const Geometry& out_g, const float* xp,
                       const Geometry& in_g, float* lanes);
// dw[i] = (accumulate ? dw[i] : 0) + the sum of lanes[p][i * 16 + l] over the 16 lanes l and
// the `parts` buffers p (one per thread), for i < n.
void reduce_lanes(const float* const* lanes, int parts, std::size_t n, bool accumulate, float* dw);

}  // namespace lbt::nn::conv_direct
