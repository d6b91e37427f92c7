// Pooling layers; see pool.hpp. Parallel over (image, channel) planes.
#include "trainer/nn/pool.hpp"

#include <algorithm>

#include "core/error.hpp"

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

}  // namespace

MaxPool2d::MaxPool2d(Shape3 in, std::int64_t kernel, std::int64_t stride)
    : in_(in), out_(pooled("MaxPool2d", in, kernel, stride)), kernel_(kernel), stride_(stride) {}

std::string MaxPool2d::describe() const {
  return "MaxPool2d(k" + std::to_string(kernel_) + " s" + std::to_string(stride_) + ")";
}

void MaxPool2d::forward(const float* x, float* y, std::int64_t batch, bool) {
  const std::int64_t planes = batch * in_.c, K = kernel_, S = stride_;
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
          o[ow] =
              std::max(std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), r1[2 * ow]), r1[2 * ow + 1]);
      }
      continue;
    }
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        const float* win = in + oh * S * in_.w + ow * S;
        float m = win[0];
        for (std::int64_t i = 0; i < K; ++i)
          for (std::int64_t j = 0; j < K; ++j) m = std::max(m, win[i * in_.w + j]);
        out[oh * out_.w + ow] = m;
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
      // The CNNs' pool: every input pixel is in exactly one window, so each is written once,
      // vectorised over a row of windows; the first maximum in row-major order wins.
      for (std::int64_t oh = 0; oh < out_.h; ++oh) {
        const float* r0 = in + 2 * oh * in_.w;
        const float* r1 = r0 + in_.w;
        float* d0 = d + 2 * oh * in_.w;
        float* d1 = d0 + in_.w;
        const float* m = out + oh * out_.w;
        const float* go = g + oh * out_.w;
#pragma omp simd
        for (std::int64_t ow = 0; ow < out_.w; ++ow) {
          const bool a = r0[2 * ow] == m[ow], b = !a && r0[2 * ow + 1] == m[ow],
                     c = !a && !b && r1[2 * ow] == m[ow], e = !a && !b && !c;
          d0[2 * ow] = a ? go[ow] : 0.0f;
          d0[2 * ow + 1] = b ? go[ow] : 0.0f;
          d1[2 * ow] = c ? go[ow] : 0.0f;
          d1[2 * ow + 1] = e ? go[ow] : 0.0f;
        }
      }
      continue;
    }
    std::fill(d, d + in_.plane(), 0.0f);
    for (std::int64_t oh = 0; oh < out_.h; ++oh) {
      for (std::int64_t ow = 0; ow < out_.w; ++ow) {
        const std::int64_t base = oh * S * in_.w + ow * S;
        const float m = out[oh * out_.w + ow];
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
