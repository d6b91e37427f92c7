// Per-example image shape [C, H, W] of a layer's input or output. Activations stay flat
// row-major [batch, C*H*W] buffers (NCHW, PyTorch's layout), so Flatten is a no-op and a
// Linear after a conv stack reads the same floats PyTorch's nn.Flatten would give it.
#pragma once
#include <cstdint>
#include <string>

namespace lbt::nn {

struct Shape3 {
  std::int64_t c = 0, h = 0, w = 0;
  std::int64_t size() const { return c * h * w; }
  std::int64_t plane() const { return h * w; }
  std::string text() const {
    return "[" + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]";
  }
  bool operator==(const Shape3&) const = default;
};

// Output side of a window op (conv, pool): floor((in + 2 * padding - kernel) / stride) + 1.
inline std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                               std::int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

}  // namespace lbt::nn
