// Image augmentation for training micro-batches (the standard CIFAR recipe of He et al. 2016,
// Sec. 4.2: pad 4, random 32x32 crop, random horizontal flip). Runs in the prefetch thread on
// the gathered batch, in place; each (step, micro-batch, rank) draws from its own stream of
// RngStream::kAugment, so results do not depend on thread timing. Padding is zeros of the
// normalised data (the training mean), where torchvision pads raw pixels with black.
#pragma once
#include <cstdint>
#include <vector>

namespace lbt::data {

struct AugmentOptions {
  std::int64_t crop_padding = 0;  // 0: no crop
  bool flip = false;
  std::uint64_t seed = 0, rank = 0;
  bool enabled() const { return crop_padding > 0 || flip; }
};

// x: [batch, C, H, W] (shape = {C, H, W}), augmented in place; `scratch` holds one image.
void augment_batch(float* x, std::int64_t batch, const std::vector<std::int64_t>& shape,
                   const AugmentOptions& options, std::int64_t stream, std::vector<float>& scratch);

}  // namespace lbt::data
