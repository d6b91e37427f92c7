// Direct convolution without im2col: "same" convolutions (stride 1, odd kernel K in {3, 5},
// padding K/2) and ResNet's downsampling 3x3 stride-2 padding-1 convolution.
//
// Stride 1: an image is copied once into planes with zero borders, each padded row
// `row = w + K - 1` floats long. Output pixel (i, j) then sits at q = i * row + j, and its
// window tap (u, v) reads the padded plane at q + u * row + v: one constant offset per tap for
// every pixel. So the convolution is a sum of K*K shifted copies of the planes, vectorised
// over runs of q that cross row ends (the K - 1 columns q lands on past each row end are
// computed and thrown away).
// Stride 2: the padded image is split into six planes of `row = w/2` columns, one per padded
// row parity a and column shift v in {0, 1, 2}: plane (a, v) holds padded pixel (2R + a,
// 2S + v) at (R, S). Tap (u, v) of output (i, j) is then pixel (i + u/2, j) of plane
// (u % 2, v): again one constant offset per tap, and no position computed past a row's end
// (four phase planes of w/2 + 1 columns computed 80 positions for ResNet's 64 at 8x8). The
// same kernels serve both.
// No column matrix is written or packed: for ResNet's 16- to 64-channel layers those copies
// cost more than the multiply-adds (bench/cnn_step.cpp).
//   forward:        y = conv(x, W)                      (register-blocked, 8 output channels)
//   input gradient: dx = conv(dy, W flipped, channels swapped)   (the same kernel; stride 2
//                   one input phase at a time, each with the taps of that parity)
//   weight grad.:   dW[o][c][t] = sum_q dy[o][q] x[c][q + offset(t)]   (lane partial sums)
#pragma once
#include <cstddef>
#include <cstdint>

#include "nn/cpu/channels_last.hpp"

namespace lbt::nn::conv_direct {

// A convolution's input planes (channels = the input's) or, with channels = out channels,
// the shape of its output positions. Stride 2 needs even h and w.
struct Geometry {
  int channels = 0, h = 0, w = 0, k = 0, stride = 1;
  int pad() const { return k / 2; }
  int out_h() const { return stride == 1 ? h : h / 2; }
  int out_w() const { return stride == 1 ? w : w / 2; }
  int row() const { return stride == 1 ? w + k - 1 : w / 2; }  // plane row length
  // Output positions computed per channel (out_h rows of row() floats), rounded up to 16.
  std::size_t out_len() const;
  // Floats per plane: its rows plus slack that the last vectors and the largest tap offset
  // may read (zeros), rounded to 16 floats (64 bytes).
  std::size_t plane() const;
  // Floats per input channel: one padded plane, or six shifted phase planes.
  std::size_t channel_stride() const { return stride == 1 ? plane() : 6 * plane(); }
  // Where tap t = u * k + v of output position q reads, relative to q.
  std::size_t offset(int t) const;
  // Floats per channel of dy as the weight gradient reads it (prepare_dy).
  std::size_t dy_stride() const { return stride == 1 ? plane() : out_len() + 16; }
};

// True when lbt's direct path computes this convolution of an h x w image: K in {3, 5} with
// stride 1 and padding K/2, or K = 3, stride 2, padding 1 on even h and w; and
// `out_channels` a multiple of 8 (the kernel's register block).
bool supports(int kernel, int stride, int padding, int out_channels, int h, int w);

// xp[c] = x[c][h][w] inside zero borders, as padded planes (stride 1) or the six phase
// planes of the padded image (stride 2); borders and slack are written too.
void pad_planes(const float* x, const Geometry& g, float* xp);
// y[o][i][j] = yp[o][i * row + j] + (bias ? bias[o] : 0) for i < out_h, j < out_w;
// g.channels = the output's. moments (may be null): y's per-plane moments, [3][channels], as
// from_channels_last writes them (channels_last.hpp).
void unpad_planes(const float* yp, const Geometry& g, const float* bias, float* y,
                  float* moments = nullptr);
// dy [out_channels][out_h][out_w] laid out as the weight gradient reads it, dy_stride() floats
// per channel, zeros past each row end; returns where position q = 0 of channel 0 is. Stride 1
// writes dy's padded planes (which the input gradient reads too) and returns their interior.
// map (stride 1 only; may be null): dy is read through it (channels_last.hpp; its x is this
// image's), the gradient at the output of the BatchNorm after the layer.
const float* prepare_dy(const float* dy, const Geometry& g, int out_channels, float* dst,
                        const BatchNormGradMap* map = nullptr);

// Weights [out][in][K*K] (PyTorch layout) rearranged for forward(): wt[in][t][out].
void arrange_forward(const float* w, int out, int in, int k, float* wt);
// ...and for the input gradient: wf[out][t][in] = w[out][in][K*K - 1 - t] (taps flipped).
void arrange_input_grad(const float* w, int out, int in, int k, float* wf);

// yp[o][q] for o < out, q < g.out_len(): sum over c < g.channels and taps t of
// wt[c][t][o] * xp[c * channel_stride + q + offset(t)]. xp is pad_planes() output for g.
void forward(const float* xp, const Geometry& g, const float* wt, int out, float* yp);

// lanes[o][c][t][16] += 16 partial sums of dyq[o][q] * xp[c][q + offset(t)] over q: the weight
// gradient before its lanes are added up (reduce_lanes), so that adding up happens once per
// batch rather than once per image. dyq = prepare_dy(); g is the convolution's input geometry.
void weight_grad_lanes(const float* dyq, int out_channels, const float* xp, const Geometry& g,
                       float* lanes);
// Stride 2 (K = 3, padding 1): the input gradient dx [g.channels][h][w] of dy
// [out_channels][out_h][out_w], one parity phase of the padded input at a time, each a small
// convolution of dy by the taps of that parity (4, 2, 2 or 1) on the forward kernel.
// wf = arrange_input_grad_stride2(w) (out_channels * in * 9 floats); scratch holds
// input_grad_stride2_scratch() floats. g.channels (dx's) must be a multiple of 8.
void arrange_input_grad_stride2(const float* w, int out, int in, float* wf);
std::size_t input_grad_stride2_scratch(const Geometry& g, int out_channels);
void input_grad_stride2(const float* dy, const Geometry& g, int out_channels, const float* wf,
                        float* scratch, float* dx);

// dw[i] = (accumulate ? dw[i] : 0) + the sum of lanes[p][i * 16 + l] over the 16 lanes l and
// the `parts` buffers p (one per thread), for i < n.
void reduce_lanes(const float* const* lanes, int parts, std::size_t n, bool accumulate, float* dw);

}  // namespace lbt::nn::conv_direct
