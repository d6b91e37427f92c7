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
    // Appended piece by piece: "[" + std::to_string(...) trips GCC 12's false -Wrestrict.
    std::string out = "[";
    out += std::to_string(c);
    out += ", ";
    out += std::to_string(h);
    out += ", ";
    out += std::to_string(w);
    out += "]";
    return out;
  }
  bool operator==(const Shape3&) const = default;
};

// Output side of a window op (conv, pool): floor((in + 2 * padding - kernel) / stride) + 1, and 0
// where the window is larger than the padded input (C++'s division truncates toward zero, which
// would give a window of 7 on 6 pixels at stride 7 one output).
inline std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                               std::int64_t padding) {
  const std::int64_t span = in + 2 * padding - kernel;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace lbt::nn
