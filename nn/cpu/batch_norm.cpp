// BatchNorm; see batch_norm.hpp. With M = batch * H * W values per channel and
// x_hat = (x - mean) * inv_std, y = gamma x_hat + beta:
//   train backward:  dgamma = sum dy x_hat,  dbeta = sum dy,
//                    dx = gamma inv_std / M * (M dy - dbeta - x_hat dgamma)
//   eval backward:   dx = gamma inv_std dy   (statistics are constants)
// with dy first masked by bn(x) > 0 when the layer includes the ReLU (options.relu).
// Threads split the batch; per-plane partial sums are added up per channel in image order.
// The loops over each plane are batch_norm_planes.hpp's, one copy per ISA.
#include "nn/cpu/batch_norm.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "nn/batch_norm_math.hpp"
#include "nn/cpu/batch_norm_planes.hpp"

namespace lbt::nn {
namespace {

// Sum over images n (in order, so that the result does not depend on the thread count) of
// 16-lane partials lanes[n * stride ... + 16), in double.
double sum_over_images(const float* lanes, std::int64_t batch, std::int64_t stride) {
  double acc[16] = {};
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* l = lanes + n * stride;
#pragma omp simd
    for (int k = 0; k < 16; ++k) acc[k] += l[k];
  }
  double sum = 0.0;
  for (double a : acc) sum += a;
  return sum;
}

// Channel c's sums of d = x - k and d^2 over the batch, with k its first value (image 0's
// shift), from per-plane moments [batch][shift, sum, sum of squares][C] about each plane's own
// shift k_n (from_channels_last): with e = k_n - k, a plane adds S1 + HW e and
// S2 + 2 e S1 + HW e^2. In double, image by image, as sum_over_images.
std::pair<double, double> sums_from_moments(const float* moments, std::int64_t batch,
                                            std::int64_t C, std::int64_t HW, std::int64_t c) {
  const double k = moments[c], hw = static_cast<double>(HW);
  double sum = 0.0, sum_squares = 0.0;
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* m = moments + n * 3 * C + c;
    const double e = m[0] - k, s1 = m[C], s2 = m[2 * C];
    sum += s1 + hw * e;
    sum_squares += s2 + 2.0 * e * s1 + hw * e * e;
  }
  return {sum, sum_squares};
}

}  // namespace

BatchNorm::BatchNorm(Shape3 shape, BatchNormOptions options)
    : shape_(shape),
      opt_(options),
      running_mean_(static_cast<std::size_t>(shape.c), 0.0f),
      running_var_(static_cast<std::size_t>(shape.c), 1.0f),
      mean_(static_cast<std::size_t>(shape.c)),
      inv_std_(static_cast<std::size_t>(shape.c)) {
  if (!(opt_.momentum >= 0.0 && opt_.momentum <= 1.0) || !(opt_.eps > 0.0)) {
    throw ConfigError("BatchNorm: momentum must be in [0, 1] and eps > 0",
                      "PyTorch's defaults are momentum 0.1, eps 1e-5");
  }
}

std::string BatchNorm::describe() const {
  return "BatchNorm(" + std::to_string(shape_.c) + (opt_.relu ? ") + ReLU" : ")");
}

void BatchNorm::register_params(ParameterStore& store, const std::string& prefix) {
  gamma_segment_ =
      store.add(prefix + ".weight", static_cast<std::size_t>(shape_.c), ParamKind::kNorm);
  beta_segment_ = store.add(prefix + ".bias", static_cast<std::size_t>(shape_.c), ParamKind::kNorm);
}

void BatchNorm::bind(ParameterStore& store) {
  gamma_ = store.param_ptr(gamma_segment_);
  beta_ = store.param_ptr(beta_segment_);
  dgamma_ = store.grad_ptr(gamma_segment_);
  dbeta_ = store.grad_ptr(beta_segment_);
}

void BatchNorm::init(Rng&) {
  std::fill(gamma_, gamma_ + shape_.c, 1.0f);
  std::fill(beta_, beta_ + shape_.c, 0.0f);
  std::fill(running_mean_.begin(), running_mean_.end(), 0.0f);
  std::fill(running_var_.begin(), running_var_.end(), 1.0f);
}

void BatchNorm::forward(const float* x, float* y, std::int64_t batch, bool train) {
  forward_fused(x, y, batch, train, nullptr, opt_.relu);
}

void BatchNorm::forward_statistics(const float* x, std::int64_t batch, bool train,
                                   const float* x_moments) {
  forward_fused(x, nullptr, batch, train, nullptr, opt_.relu, nullptr, x_moments);
}

// Per-plane partial sums [batch][C][2][16] (both modes), and eight per-channel vectors: the
// running and last statistics, the affine map and the backward's coefficients.
std::int64_t BatchNorm::workspace_bytes(std::int64_t batch, int) const {
  const std::int64_t C = shape_.c;
  return aligned_buffer_bytes(batch * C * 32) + 9 * C * 4;
}

void BatchNorm::forward_fused(const float* x, float* y, std::int64_t batch, bool train,
                              const float* residual, bool relu, const ChannelAffine* residual_map,
                              const float* x_moments) {
  const std::int64_t C = shape_.c, HW = shape_.plane(), M = batch * HW;
  if (opt_.relu && (residual || !relu))
    throw std::logic_error("BatchNorm with options.relu: its backward masks by bn(x) > 0 alone");
  if (residual_map && residual_map->relu)
    throw std::logic_error("BatchNorm::forward_fused: the residual map must not include a ReLU");
  if (train && M < 2) {
    throw ConfigError("BatchNorm in train mode needs more than one value per channel, got batch " +
                          std::to_string(batch) + " of " + shape_.text(),
                      "use a micro-batch of at least 2");
  }
  last_train_ = train;
  lane_sums_.resize(static_cast<std::size_t>(batch * C * 32));
  scale_.resize(static_cast<std::size_t>(C));
  shift_.resize(static_cast<std::size_t>(C));
  float* lanes = lane_sums_.data();  // [batch][C][sum d, sum d^2][16]
  // Threads split the batch, as the convolutions around do, so that each reads the images it
  // wrote; per-plane partials are added up in image order, so the statistics do not depend on
  // the thread count.
#pragma omp parallel if (batch * C * HW > 32768)
  {
    if (train && !x_moments) {
      // One pass over x (a second one, for the deviations from the mean, cost a read of x from
      // memory at batch 128): sums of d = x - k_c with k_c a value of channel c itself (its
      // first), so that var = E[d^2] - E[d]^2 cancels only about (mean - k_c)^2 / var, a few
      // units (Chan, Golub & LeVeque 1983, the shifted-data algorithm); x - k_c is exact for
      // values within a factor 2 of k_c (Sterbenz).
#pragma omp for schedule(static)
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t c = 0; c < C; ++c) {
          bn_planes::shifted_sums(x + (n * C + c) * HW, HW, x[c * HW], lanes + (n * C + c) * 32);
        }
    }
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < C; ++c) {
      const bn::ChannelMap map = [&] {
        if (!train)
          return bn::eval_map(running_mean_[c], running_var_[c], opt_.eps, gamma_[c], beta_[c]);
        const auto [sum, sum_squares] =
            x_moments ? sums_from_moments(x_moments, batch, C, HW, c)
                      : std::pair{sum_over_images(lanes + c * 32, batch, C * 32),
                                  sum_over_images(lanes + c * 32 + 16, batch, C * 32)};
        return bn::train_map(sum, sum_squares, x[c * HW], M, opt_.momentum, opt_.eps, gamma_[c],
                             beta_[c], running_mean_[c], running_var_[c]);
      }();
      mean_[c] = map.mean, inv_std_[c] = map.inv_std;
      scale_[c] = map.scale, shift_[c] = map.shift;
    }
    if (y) {  // not in forward_statistics
#pragma omp for schedule(static)
      for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < C; ++c) {
          const std::int64_t at = (n * C + c) * HW;
          bn_planes::affine(x + at, scale_[c], shift_[c], residual ? residual + at : nullptr,
                            residual_map ? residual_map->scale[c] : 1.0f,
                            residual_map ? residual_map->shift[c] : -0.0f, relu, HW, y + at);
        }
      }
    }
  }
}

void BatchNorm::backward(const float* x, const float*, const float* dy, float* dx,
                         std::int64_t batch, bool accumulate) {
  backward_masked(x, nullptr, dy, nullptr, dx, batch, accumulate);
}

void BatchNorm::backward_masked(const float* x, const float* out, const float* dy, float* masked_dy,
                                float* dx, std::int64_t batch, bool accumulate) {
  const std::int64_t C = shape_.c, HW = shape_.plane(), M = batch * HW;
  lane_sums_.resize(static_cast<std::size_t>(batch * C * 32));
  for (auto* v : {&dx_k_, &dx_a_, &dx_b_}) v->resize(static_cast<std::size_t>(C));
  const bool relu = opt_.relu;
  float* lanes = lane_sums_.data();  // [batch][C][sum dy, sum dy (x - mean)][16]
#pragma omp parallel if (batch * C * HW > 32768)
  {
#pragma omp for schedule(static)
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t c = 0; c < C; ++c) {
        const std::int64_t at = (n * C + c) * HW;
        const float* g = dy + at;
        if (out) {  // the ReLU after the residual sum: masked_dy = dy [out > 0], read from L1
          bn_planes::mask_by_positive(out + at, g, HW, masked_dy + at);
          g = masked_dy + at;
        }
        bn_planes::grad_sums(x + at, g, HW, mean_[c], scale_[c], shift_[c], relu,
                             lanes + (n * C + c) * 32);
      }
    }
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < C; ++c) {
      const bn::ChannelMap map{mean_[c], inv_std_[c], scale_[c], shift_[c]};
      const bn::GradCoefficients g =
          bn::grad_coefficients(sum_over_images(lanes + c * 32, batch, C * 32),
                                sum_over_images(lanes + c * 32 + 16, batch, C * 32), map, gamma_[c],
                                M, last_train_, accumulate, dgamma_[c], dbeta_[c]);
      dx_k_[c] = g.k, dx_a_[c] = g.a, dx_b_[c] = g.b;
    }
    if (dx) {
#pragma omp for schedule(static)
      for (std::int64_t n = 0; n < batch; ++n) {
        for (std::int64_t c = 0; c < C; ++c) {
          const std::int64_t at = (n * C + c) * HW;
          bn_planes::input_grad(x + at, (out ? masked_dy : dy) + at, HW, dx_k_[c], dx_a_[c],
                                dx_b_[c], mean_[c], relu, scale_[c], shift_[c], dx + at);
        }
      }
    }
  }
}

}  // namespace lbt::nn
