// Augmentation; see augment.hpp.
#include "trainer/data/augment.hpp"

#include <algorithm>

#include "core/rng.hpp"

namespace lbt::data {

void augment_batch(float* x, std::int64_t batch, const std::vector<std::int64_t>& shape,
                   const AugmentOptions& options, std::int64_t stream, std::vector<float>& scratch) {
  if (!options.enabled() || shape.size() != 3) return;
  const std::int64_t C = shape[0], H = shape[1], W = shape[2], P = options.crop_padding;
  const std::int64_t size = C * H * W;
  scratch.resize(static_cast<std::size_t>(size));
  auto rng = make_rng(options.seed, RngStream::kAugment,
                      (static_cast<std::uint64_t>(stream) << 16) + options.rank);
  for (std::int64_t n = 0; n < batch; ++n) {
    float* img = x + n * size;
    // Offsets in [-P, P]: output (i, j) reads input (i + dy, j + dx), zero outside.
    const std::int64_t dy = P > 0 ? static_cast<std::int64_t>(rng() % (2 * P + 1)) - P : 0;
    const std::int64_t dx = P > 0 ? static_cast<std::int64_t>(rng() % (2 * P + 1)) - P : 0;
    const bool flip = options.flip && (rng() & 1);
    if (dy == 0 && dx == 0 && !flip) continue;
    std::copy(img, img + size, scratch.begin());
    for (std::int64_t c = 0; c < C; ++c) {
      for (std::int64_t i = 0; i < H; ++i) {
        float* out = img + (c * H + i) * W;
        const std::int64_t si = i + dy;
        for (std::int64_t j = 0; j < W; ++j) {
          const std::int64_t sj = (flip ? W - 1 - j : j) + dx;
          out[j] = (si >= 0 && si < H && sj >= 0 && sj < W) ? scratch[(c * H + si) * W + sj] : 0.0f;
        }
      }
    }
  }
}

}  // namespace lbt::data
