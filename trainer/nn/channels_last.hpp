// Images between NCHW (the layers' layout) and channels-last (height, width, channel: 16
// channels of a pixel in one vector, as the Winograd transforms read them), 16 channels x 16
// pixels at a time through a register transpose. C must be a multiple of 16.
#pragma once
#include <cstdint>

namespace lbt::nn {

// dst[n][(i + p) * wp + j + p][c] = x[n][c][i][j] for `count` images, inside zero borders: p
// rows and columns before the image, hp - h - p rows and wp - w - p columns after it.
void to_channels_last(const float* x, int C, int h, int w, int p, int hp, int wp,
                      std::int64_t count, float* dst);

// y[n][c][q] = src[n][q][c] (+ bias[c] when bias is not null) (+ addend[n][c][q] when addend
// is not null; it may be y itself) for q < hw: back to NCHW.
void from_channels_last(const float* src, int C, int hw, const float* bias, std::int64_t count,
                        float* y, const float* addend = nullptr);

}  // namespace lbt::nn
