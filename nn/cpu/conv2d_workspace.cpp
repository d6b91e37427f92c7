// Conv2d::workspace_bytes: the buffers each convolution path sizes for itself (conv2d.cpp,
// conv2d_backward.cpp, conv2d_winograd.cpp, conv2d_subsampled.cpp), counted from the same
// sizes those files pass to resize. Per-thread scratch holds one image or one group of images,
// so it grows with the thread count, not with the batch (backward_adding's dx scratch, which
// does, is counted by the residual block that calls it).
#include <algorithm>

#include "nn/cpu/conv2d.hpp"

namespace lbt::nn {

std::int64_t Conv2d::workspace_bytes(std::int64_t batch, int threads) const {
  if (onednn_) return onednn_->workspace_bytes(batch);
  const auto bytes = [](std::size_t floats) {
    return aligned_buffer_bytes(static_cast<std::int64_t>(floats));
  };
  const int T = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, batch)));
  const std::size_t wsize = static_cast<std::size_t>(out_.c * rows_);
  const std::size_t bsize = b_ ? static_cast<std::size_t>(out_.c) : 0;
  const std::size_t col_size = static_cast<std::size_t>(rows_ * out_.plane());
  std::int64_t per_thread = 0, shared = 0;
  if (winograd_) {
    // Transformed weights (forward, input gradient), per thread the weight gradient's and
    // the tile scratch of one group of images (winograd.cpp: padded, dy, v, m, out).
    const winograd::Shape s = winograd_shape();
    const std::size_t transformed = winograd::transformed_size(s.r, s.in_c, s.out_c);
    const std::int64_t group =
        std::max<std::int64_t>(1, std::min(winograd::group_size(s), (batch + T - 1) / T));
    const auto C = static_cast<std::size_t>(std::max(s.in_c, s.out_c));
    const auto g = static_cast<std::size_t>(group);
    const std::size_t tiles = g * static_cast<std::size_t>(s.tiles());
    const auto positions = static_cast<std::size_t>(s.positions());
    const std::size_t padded = g * s.padded_h() * s.padded_w();
    shared = 2 * bytes(transformed);
    per_thread = bytes(transformed) + bytes(bsize) + bytes(padded * s.in_c) +
                 bytes(padded * s.out_c) + 2 * bytes(positions * (tiles * C + 16)) +
                 bytes(g * s.h * s.w * C);
  } else if (subsampled_) {
    const std::size_t plane = static_cast<std::size_t>(in_.c * out_.plane());
    per_thread = 3 * bytes(plane) + bytes(wsize + bsize);
  } else {
    // Direct (padded planes) and im2col paths, sized as reserve_backward and forward do.
    const conv_direct::Geometry in_g = plane_geometry();
    const bool dx_direct = planes_ && in_.c % 8 == 0;
    const bool need_col = !dw_lanes_ && !pointwise();
    const std::int64_t group = need_col ? dw_group(batch, T) : 1;
    const bool panel_dw = need_col && out_.c % 16 == 0 && out_.plane() <= 256;
    shared = planes_ ? bytes(wsize) * (dx_direct ? 2 : 1) : 0;
    per_thread = bytes(wsize + bsize);
    if (need_col) per_thread += bytes(col_size * static_cast<std::size_t>(group));
    if (group > 1 || panel_dw) per_thread += bytes(static_cast<std::size_t>(out_.size() * group));
    if (!dx_direct && !pointwise()) per_thread += bytes(col_size);
    if (planes_) {
      per_thread += bytes(in_.c * in_g.channel_stride());
      conv_direct::Geometry out_g = in_g;
      out_g.channels = static_cast<int>(out_.c);
      std::size_t out_floats = out_g.channels * out_g.out_len();
      if (dx_direct && opt_.stride == 1) out_floats = std::max(out_floats, in_.c * in_g.out_len());
      per_thread += bytes(out_floats);
      if (dw_lanes_ || (dx_direct && opt_.stride == 1))
        per_thread += bytes(out_.c * in_g.dy_stride());
      if (dw_lanes_) per_thread += bytes(wsize * 16);
    }
  }
  return shared + T * per_thread;
}

}  // namespace lbt::nn
