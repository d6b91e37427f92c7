// Pooling layers; see pool.hpp. Parallel over (image, channel) planes.
#include "nn/cpu/pool.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/vec16.hpp"

namespace lbt::nn {
namespace {

Shape3 pooled(const char* name, Shape3 in, std::int64_t kernel, std::int64_t stride) {
  Shape3 out{in.c, window_out(in.h, kernel, stride, 0), window_out(in.w, kernel, stride, 0)};
  if (kernel <= 0 || stride <= 0 || out.h <= 0 || out.w <= 0) {
    throw ConfigError(std::string(name) + "(k" + std::to_string(kernel) + " s" +
                          std::to_string(stride) + ") does not fit its input " + in.text(),
                      "the image must be at least as large as the pooling window");
  }
  return out;
}

constexpr std::int64_t kParallelPlanes = 64;

using vec::v16;
using vec::v16i;

// One row of 2x2 stride-2 windows, n of them: rows r0, r1 of 2n inputs, their maxima m and
// output gradients g; d0, d1 get g at each window's first maximum in row-major order and zero
// elsewhere (nothing where relu and m <= 0). 16 windows per step, branch-free: the scalar version's
// data-dependent branches mispredicted on every other window (perf: 17% of a simple CNN step).
void max_pool_2x2_backward_row(const float* r0, const float* r1, const float* m, const float* g,
                               float* d0, float* d1, std::int64_t n, bool relu) {
  for (std::int64_t w0 = 0; w0 < n; w0 += 16) {
    const int count = static_cast<int>(std::min<std::int64_t>(16, n - w0));
    const int first = std::min(count, 8), second = std::max(count - 8, 0);  // windows per half
    const v16 lo0 = vec::load_first(r0 + 2 * w0, 2 * first);
    const v16 hi0 = vec::load_first(r0 + 2 * w0 + 16, 2 * second);
    const v16 lo1 = vec::load_first(r1 + 2 * w0, 2 * first);
    const v16 hi1 = vec::load_first(r1 + 2 * w0 + 16, 2 * second);
    const v16 mv = vec::load_first(m + w0, count), gv = vec::load_first(g + w0, count);
    const v16i top_left = vec::even_of(lo0, hi0) == mv;
    const v16i top_right = ~top_left & (vec::odd_of(lo0, hi0) == mv);
    const v16i bottom_left = ~top_left & ~top_right & (vec::even_of(lo1, hi1) == mv);
    const v16i bottom_right = ~(top_left | top_right | bottom_left);
    const v16i gi = relu ? vec::as_int(gv) & (mv > 0.0f) : vec::as_int(gv);  // fused ReLU
    const v16 tl = vec::as_float(gi & top_left), tr = vec::as_float(gi & top_right);
    const v16 bl = vec::as_float(gi & bottom_left), br = vec::as_float(gi & bottom_right);
    vec::store_first(d0 + 2 * w0, vec::interleave_low(tl, tr), 2 * first);
    vec::store_first(d0 + 2 * w0 + 16, vec::interleave_high(tl, tr), 2 * second);
    vec::store_first(d1 + 2 * w0, vec::interleave_low(bl, br), 2 * first);
    vec::store_first(d1 + 2 * w0 + 16, vec::interleave_high(bl, br), 2 * second);
  }
}

}  // namespace

MaxPool2d::MaxPool2d(Shape3 in, std::int64_t kernel, std::int64_t stride, bool relu)
    : in_(in),
      out_(pooled("MaxPool2d", in, kernel, stride)),
      kernel_(kernel),
      stride_(stride),
      relu_(relu) {}

std::string MaxPool2d::describe() const {
  return "MaxPool2d(k" + std::to_string(kernel_) + " s" + std::to_string(stride_) + ")" +
         (relu_ ? " + ReLU" : "");
}

void MaxPool2d::forward(const float* x, float* y, std::int64_t batch, bool) {
  const std::int64_t planes = batch * in_.c, K = kernel_, S = stride_;
  const float floor = relu_ ? 0.0f : -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static) if (planes > kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_.plane();
    float* out = y + p * out_.plane();
    if (K == 2 && S == 2) {  // the CNNs' pool: compile-time window, vectorised over a row
      for (std::int64_t oh = 0; oh < out_.h; ++oh) {
        const float* r0 = in + 2 * oh * in_.w;
        const float* r1 = r0 + in_.w;
        float* o = out + oh * out_.w;
#pragma omp simd
        for (std::int64_t ow = 0; ow < out_.w; ++ow)
          o[ow] = std::max(
              std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1])),
              floor);
      }
      continue;
    }
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        const float* win = in + oh * S * in_.w + ow * S;
        float m = win[0];
        for (std::int64_t i = 0; i < K; ++i)
          for (std::int64_t j = 0; j < K; ++j) m = std::max(m, win[i * in_.w + j]);
        out[oh * out_.w + ow] = std::max(m, floor);
      }
    }
  }
}

void MaxPool2d::backward(const float* x, const float* y, const float* dy, float* dx,
                         std::int64_t batch, bool) {
  if (!dx) return;
  const std::int64_t planes = batch * in_.c, K = kernel_, S = stride_;
#pragma omp parallel for schedule(static) if (planes > kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_.plane();
    const float* out = y + p * out_.plane();
    const float* g = dy + p * out_.plane();
    float* d = dx + p * in_.plane();
    if (K == 2 && S == 2 && in_.h % 2 == 0 && in_.w % 2 == 0) {
      // The CNNs' pool: every input pixel is in exactly one window, so each is written once.
      for (std::int64_t oh = 0; oh < out_.h; ++oh) {
        const std::int64_t row = 2 * oh * in_.w;
        max_pool_2x2_backward_row(in + row, in + row + in_.w, out + oh * out_.w, g + oh * out_.w,
                                  d + row, d + row + in_.w, out_.w, relu_);
      }
      continue;
    }
    std::fill(d, d + in_.plane(), 0.0f);
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        const std::int64_t base = oh * S * in_.w + ow * S;
        const float m = out[oh * out_.w + ow];
        if (relu_ && !(m > 0.0f)) continue;  // the fused ReLU passes no gradient
        std::int64_t arg = base;
        for (std::int64_t i = K; i-- > 0;)  // backwards, so the first maximum wins
          for (std::int64_t j = K; j-- > 0;)
            if (in[base + i * in_.w + j] == m) arg = base + i * in_.w + j;
        d[arg] += g[oh * out_.w + ow];
      }
    }
  }
}

AvgPool2d::AvgPool2d(Shape3 in, std::int64_t kernel, std::int64_t stride)
    : in_(in), out_(pooled("AvgPool2d", in, kernel, stride)), kernel_(kernel), stride_(stride) {}

std::string AvgPool2d::describe() const {
  return "AvgPool2d(k" + std::to_string(kernel_) + " s" + std::to_string(stride_) + ")";
}

void AvgPool2d::forward(const float* x, float* y, std::int64_t batch, bool) {
  const std::int64_t planes = batch * in_.c, K = kernel_, S = stride_;
  const float scale = 1.0f / static_cast<float>(K * K);
#pragma omp parallel for schedule(static) if (planes > kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_.plane();
    float* out = y + p * out_.plane();
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        const float* win = in + oh * S * in_.w + ow * S;
        float s = 0.0f;
        for (std::int64_t i = 0; i < K; ++i)
          for (std::int64_t j = 0; j < K; ++j) s += win[i * in_.w + j];
        out[oh * out_.w + ow] = s * scale;
      }
    }
  }
}

void AvgPool2d::backward(const float*, const float*, const float* dy, float* dx, std::int64_t batch,
                         bool) {
  if (!dx) return;
  const std::int64_t planes = batch * in_.c, K = kernel_, S = stride_;
  const float scale = 1.0f / static_cast<float>(K * K);
#pragma omp parallel for schedule(static) if (planes > kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* g = dy + p * out_.plane();
    float* d = dx + p * in_.plane();
    std::fill(d, d + in_.plane(), 0.0f);
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        float* win = d + oh * S * in_.w + ow * S;
        const float v = g[oh * out_.w + ow] * scale;
        for (std::int64_t i = 0; i < K; ++i)
          for (std::int64_t j = 0; j < K; ++j) win[i * in_.w + j] += v;
      }
    }
  }
}

void GlobalAvgPool::forward(const float* x, float* y, std::int64_t batch, bool) {
  const std::int64_t planes = batch * in_.c, n = in_.plane();
  const float scale = 1.0f / static_cast<float>(n);
#pragma omp parallel for schedule(static) if (planes > 4 * kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * n;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = 0; i < n; ++i) s += in[i];
    y[p] = s * scale;
  }
}

void GlobalAvgPool::backward(const float*, const float*, const float* dy, float* dx,
                             std::int64_t batch, bool) {
  if (!dx) return;
  const std::int64_t planes = batch * in_.c, n = in_.plane();
  const float scale = 1.0f / static_cast<float>(n);
#pragma omp parallel for schedule(static) if (planes > 4 * kParallelPlanes)
  for (std::int64_t p = 0; p < planes; ++p) std::fill(dx + p * n, dx + (p + 1) * n, dy[p] * scale);
}

}  // namespace lbt::nn
