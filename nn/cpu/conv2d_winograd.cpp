// Conv2d's Winograd path; see conv2d.hpp and winograd.hpp. Threads split the batch into groups
// of images (winograd::group_size, at most each thread's share). Per step the weights are
// transformed once for the forward and once, flipped, for the input gradient; the weight
// gradient is summed in the transformed domain per thread, added up across threads and
// transformed back once (G^T dU G).
#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "nn/cpu/conv2d.hpp"

namespace lbt::nn {

namespace {

std::int64_t group_for(const winograd::Shape& s, std::int64_t batch, int threads) {
  const std::int64_t share = (batch + threads - 1) / threads;
  return std::max<std::int64_t>(1, std::min(winograd::group_size(s), share));
}

}  // namespace

winograd::Shape Conv2d::winograd_shape() const {
  return {static_cast<int>(in_.c), static_cast<int>(out_.c), static_cast<int>(in_.h),
          static_cast<int>(in_.w), static_cast<int>(opt_.kernel)};
}

void Conv2d::forward_affine(const float* x, const ChannelAffine& affine, float* y,
                            std::int64_t batch, float* y_moments) {
  if (!winograd_ || (y_moments && !writes_output_moments()))
    throw std::logic_error(
        "Conv2d::forward_affine: only on the Winograd path, moments without bias");
  forward_winograd(x, y, batch, &affine, y_moments);
}

void Conv2d::forward_with_moments(const float* x, float* y, std::int64_t batch, float* y_moments) {
  if (!writes_output_moments())
    throw std::logic_error("Conv2d::forward_with_moments: only on the Winograd and direct paths");
  if (winograd_)
    forward_winograd(x, y, batch, nullptr, y_moments);
  else
    forward_planes(x, y, batch, y_moments);
}

void Conv2d::backward_affine(const float* x, const ChannelAffine& affine, const float* dy,
                             float* dx, std::int64_t batch, bool accumulate,
                             const BatchNormGradMap* dy_map) {
  if (!winograd_ || (dy_map && !reads_mapped_gradient()))
    throw std::logic_error(
        "Conv2d::backward_affine: only on the Winograd path, no bias with a map");
  backward_winograd(x, dy, dx, batch, accumulate, nullptr, &affine, dy_map);
}

void Conv2d::forward_winograd(const float* x, float* y, std::int64_t batch,
                              const ChannelAffine* x_affine, float* y_moments) {
  const winograd::Shape s = winograd_shape();
  const int threads = threads_for(batch);
  w_winograd_.resize(winograd::transformed_size(s.r, s.in_c, s.out_c));
  winograd::transform_weights(w_, s.out_c, s.in_c, s.r, false, w_winograd_.data());
  if (winograd_ws_.size() < static_cast<std::size_t>(threads))
    winograd_ws_.resize(static_cast<std::size_t>(threads));
  const std::int64_t group = group_for(s, batch, threads);
  const std::int64_t groups = (batch + group - 1) / group;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t grp = 0; grp < groups; ++grp) {
    const std::int64_t n0 = grp * group, count = std::min(group, batch - n0);
    winograd::convolve(s, x + n0 * in_.size(), count, w_winograd_.data(), b_, y + n0 * out_.size(),
                       winograd_ws_[static_cast<std::size_t>(omp_get_thread_num())], x_affine,
                       y_moments ? y_moments + n0 * 3 * out_.c : nullptr);
  }
}

void Conv2d::backward_winograd(const float* x, const float* dy, float* dx, std::int64_t batch,
                               bool accumulate, const float* dx_addend,
                               const ChannelAffine* x_affine, const BatchNormGradMap* dy_map) {
  const winograd::Shape s = winograd_shape();
  const int threads = threads_for(batch);
  const auto T = static_cast<std::size_t>(threads);
  const std::size_t transformed = winograd::transformed_size(s.r, s.in_c, s.out_c);
  if (dx) {
    w_winograd_dx_.resize(transformed);
    winograd::transform_weights(w_, s.out_c, s.in_c, s.r, true, w_winograd_dx_.data());
  }
  if (winograd_ws_.size() < T) winograd_ws_.resize(T);
  if (dw_winograd_.size() < T) dw_winograd_.resize(T);
  if (dw_part_.size() < T) dw_part_.resize(T);
  for (std::size_t t = 0; t < T; ++t) {
    dw_winograd_[t].resize(transformed);
    if (b_ && dw_part_[t].size() < static_cast<std::size_t>(out_.c))
      dw_part_[t].resize(static_cast<std::size_t>(out_.c));
  }
  const std::int64_t group = group_for(s, batch, threads);
  const std::int64_t groups = (batch + group - 1) / group;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    winograd::Workspace& ws = winograd_ws_[t];
    float* du = dw_winograd_[t].data();
    std::fill(du, du + transformed, 0.0f);
    float* db_t = b_ ? dw_part_[t].data() : nullptr;
    if (db_t) std::fill(db_t, db_t + out_.c, 0.0f);
#pragma omp for schedule(static)
    for (std::int64_t grp = 0; grp < groups; ++grp) {
      const std::int64_t n0 = grp * group, count = std::min(group, batch - n0);
      const float* dyn = dy + n0 * out_.size();
      const BatchNormGradMap group_map =
          dy_map ? dy_map->advanced(n0 * out_.size()) : BatchNormGradMap{};
      winograd::accumulate_weight_grad(s, x + n0 * in_.size(), dyn, count, du, ws, x_affine,
                                       dy_map ? &group_map : nullptr);
      if (dx)
        winograd::input_grad_after_weight_grad(s, count, w_winograd_dx_.data(),
                                               dx + n0 * in_.size(), ws,
                                               dx_addend ? dx_addend + n0 * in_.size() : nullptr);
      for (std::int64_t n = 0; db_t && n < count; ++n)
        add_bias_grad(dyn + n * out_.size(), false, db_t);
    }
  }
  // The threads' transformed partials into the first, then back to dW once.
  float* du = dw_winograd_[0].data();
  if (T > 1) {
    const auto n = static_cast<std::ptrdiff_t>(transformed);
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (std::ptrdiff_t i = 0; i < n; ++i)
      for (std::size_t t = 1; t < T; ++t) du[i] += dw_winograd_[t][static_cast<std::size_t>(i)];
  }
  winograd::weight_grad_from_transformed(du, s.out_c, s.in_c, s.r, accumulate, dw_);
  for (std::int64_t o = 0; b_ && o < out_.c; ++o) {
    float sum = 0.0f;
    for (std::size_t t = 0; t < T; ++t) sum += dw_part_[t][static_cast<std::size_t>(o)];
    db_[o] = accumulate ? db_[o] + sum : sum;
  }
}

}  // namespace lbt::nn
