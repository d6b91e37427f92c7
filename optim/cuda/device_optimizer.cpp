// DeviceOptimizer: the host side of the GPU's fused steps. What the CPU optimizers compute per
// segment (sgd.cpp, adam.cpp, lars.cpp, larc.cpp, lamb.cpp) is computed here by the same
// functions; the elements are updated by kernels.cu.
#include "optim/cuda/device_optimizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"
#include "optim/cuda/kernels.hpp"

namespace lbt::optim::cuda {
namespace {

using lbt::cuda::DeviceArray;

// Elements per chunk: one thread block's share, small enough that a 512 x 512 layer spreads
// over 32 blocks, large enough that a block's launch is amortised.
constexpr std::int64_t kChunkElements = 8192;

std::vector<DeviceChunk> plan_chunks(const std::vector<Segment>& segments) {
  std::vector<DeviceChunk> chunks;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const auto offset = static_cast<std::int64_t>(segments[s].offset);
    const auto end = offset + static_cast<std::int64_t>(segments[s].size);
    for (std::int64_t at = offset; at < end; at += kChunkElements)
      chunks.push_back({static_cast<std::int32_t>(s), at, std::min(end, at + kChunkElements)});
  }
  return chunks;
}

bool sgd_family(const std::string& name) {
  return name == "sgd" || name == "momentum" || name == "nesterov";
}
bool adam_family(const std::string& name) {
  return name == "adam" || name == "adamw";
}

}  // namespace

struct DeviceOptimizer::Impl {
  const OptimizerOptions options;
  const std::vector<Segment> segments;
  const std::vector<DeviceChunk> host_chunks;
  DeviceArray<DeviceChunk> chunks;
  DeviceArray<SegmentScalars> scalars;
  std::vector<SegmentScalars> uploaded;  // what `scalars` holds
  DeviceArray<double> parts;             // K partial sums per chunk of the norm passes
  DeviceArray<float> momentum, m, v;

  Impl(const OptimizerOptions& o, std::vector<Segment> segs, std::size_t n)
      : options(o),
        segments(std::move(segs)),
        host_chunks(plan_chunks(segments)),
        chunks(std::span<const DeviceChunk>(host_chunks)),
        scalars(segments.size()),
        parts(3 * std::max<std::size_t>(host_chunks.size(), 1)) {
    const std::string& base = o.name == "larc" ? o.larc_base : o.name;
    if (o.name == "larc" && !sgd_family(base) && !adam_family(base))
      throw ConfigError(
          "optimizer.larc.base must be sgd, momentum, nesterov, adam or adamw, got '" + base + "'");
    const bool uses_momentum =
        (sgd_family(base) && o.sgd.momentum > 0.0) || (o.name == "lars" && o.lars.momentum > 0.0);
    if (uses_momentum) momentum = DeviceArray<float>(n);
    if (adam_family(base) || o.name == "lamb") m = DeviceArray<float>(n), v = DeviceArray<float>(n);
  }

  // The scalars go up only when they changed: a copy from pageable memory waits for the GPU,
  // which SGD and Adam, whose scalars are the same every step, need not do.
  ChunkLaunch launch(const std::vector<SegmentScalars>& per_segment) {
    if (!same(per_segment, uploaded)) {
      scalars.upload(per_segment);
      uploaded = per_segment;
    }
    return {chunks.data(), static_cast<std::int64_t>(host_chunks.size()), scalars.data()};
  }
  static bool same(const std::vector<SegmentScalars>& a, const std::vector<SegmentScalars>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
             return x.s0 == y.s0 && x.s1 == y.s1 && x.s2 == y.s2 && x.s3 == y.s3;
           });
  }

  // Per-segment totals of the K sums the last norm pass wrote, added in chunk order.
  template <std::size_t K>
  std::vector<std::array<double, K>> segment_sums() const {
    const std::vector<double> host = parts.download();
    std::vector<std::array<double, K>> total(segments.size(), std::array<double, K>{});
    for (std::size_t c = 0; c < host_chunks.size(); ++c)
      for (std::size_t k = 0; k < K; ++k) total[host_chunks[c].segment][k] += host[K * c + k];
    return total;
  }

  // The segment-wise base step (SGD family or Adam family) with g' = scale (g + l2 w).
  void base_step(float* w, const float* g, double lr, std::int64_t step,
                 const std::vector<GradTransform>& t) {
    const std::string& base = options.name == "larc" ? options.larc_base : options.name;
    std::vector<SegmentScalars> per_segment(segments.size());
    if (sgd_family(base)) {
      const SgdOptions& o = options.sgd;
      for (std::size_t s = 0; s < segments.size(); ++s) per_segment[s] = {t[s].scale, t[s].l2};
      const rules::SgdCoefficients k{static_cast<float>(lr),
                                     static_cast<float>(o.momentum),
                                     static_cast<float>(1.0 - o.momentum),
                                     static_cast<float>(1.0 - o.dampening),
                                     step == 0,
                                     o.nesterov};
      return sgd(launch(per_segment), w, g, momentum.size() ? momentum.data() : nullptr, k);
    }
    const AdamOptions& o = options.adam;
    const float decoupled = o.decoupled ? static_cast<float>(o.weight_decay) : 0.0f;
    for (std::size_t s = 0; s < segments.size(); ++s)
      per_segment[s] = {t[s].scale, t[s].l2, segments[s].weight_decay ? decoupled : 0.0f};
    adam(launch(per_segment), w, g, m.data(), v.data(), static_cast<float>(lr),
         adam_coefficients(o, step));
  }

  // The transforms Sgd::step and Adam::step hand their own kernels: coupled decay only.
  std::vector<GradTransform> coupled_decay() const {
    const std::string& name = options.name;
    const float l2 = sgd_family(name)         ? static_cast<float>(options.sgd.weight_decay)
                     : options.adam.decoupled ? 0.0f
                                              : static_cast<float>(options.adam.weight_decay);
    std::vector<GradTransform> t;
    for (const Segment& seg : segments) t.push_back({1.0f, seg.weight_decay ? l2 : 0.0f});
    return t;
  }

  void larc_step(float* w, const float* g, double lr, std::int64_t step);
  void lars_step(float* w, const float* g, double lr);
  void lamb_step(float* w, const float* g, double lr, std::int64_t step);
};

// Larc::step: |w|, |g| of the trust-ratio segments, then the base with rescaled gradients.
void DeviceOptimizer::Impl::larc_step(float* w, const float* g, double lr, std::int64_t step) {
  std::vector<SegmentScalars> flags(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s) flags[s].s3 = segments[s].trust_ratio;
  lars_norms(launch(flags), w, g, parts.data());
  const auto sums = segment_sums<3>();
  std::vector<GradTransform> t;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const double decay = segments[s].weight_decay ? options.larc.weight_decay : 0.0;
    GradTransform ts{1.0f, static_cast<float>(decay)};
    if (segments[s].trust_ratio) {
      const double w_norm = std::sqrt(sums[s][0]), g_norm = std::sqrt(sums[s][1]);
      if (w_norm == 0.0 || g_norm == 0.0)
        ts = {1.0f, 0.0f};
      else
        ts.scale = static_cast<float>(larc_factor(options.larc, w_norm, g_norm, decay, lr));
    }
    t.push_back(ts);
  }
  base_step(w, g, lr, step, t);
}

// Lars::step: |w|, |g|, |g + beta w| per segment, then v = mu v + a d; w -= c v.
void DeviceOptimizer::Impl::lars_step(float* w, const float* g, double lr) {
  const LarsOptions& o = options.lars;
  std::vector<SegmentScalars> per_segment(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s)
    per_segment[s] = {segments[s].weight_decay ? static_cast<float>(o.weight_decay) : 0.0f, 0, 0,
                      segments[s].trust_ratio ? 1.0f : 0.0f};
  lars_norms(launch(per_segment), w, g, parts.data());
  const auto sums = segment_sums<3>();
  const bool before = o.lr_placement == LarsLrPlacement::kBeforeMomentum;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const double decay = segments[s].weight_decay ? o.weight_decay : 0.0;
    const double local_lr = segments[s].trust_ratio
                                ? lars_local_lr(o, std::sqrt(sums[s][0]), std::sqrt(sums[s][1]),
                                                std::sqrt(sums[s][2]), decay)
                                : 1.0;
    per_segment[s].s1 = static_cast<float>(before ? lr * local_lr : local_lr);
    per_segment[s].s2 = static_cast<float>(before ? 1.0 : lr);
  }
  lars(launch(per_segment), w, g, momentum.size() ? momentum.data() : nullptr,
       static_cast<float>(1.0 - o.momentum));
}

// Lamb::step: moments (and the AdamW step off the trust ratio), |w|, |u|, then w -= lr r u.
void DeviceOptimizer::Impl::lamb_step(float* w, const float* g, double lr, std::int64_t step) {
  const LambOptions& o = options.lamb;
  const rules::AdamCoefficients k = lamb_coefficients(o, step);
  std::vector<SegmentScalars> per_segment(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s)
    per_segment[s] = {segments[s].weight_decay ? static_cast<float>(o.weight_decay) : 0.0f, 0, 0,
                      lamb_applies_trust_ratio(o, segments[s]) ? 1.0f : 0.0f};
  lamb_moments(launch(per_segment), w, g, m.data(), v.data(), static_cast<float>(lr), k,
               parts.data());
  const auto sums = segment_sums<2>();
  for (std::size_t s = 0; s < segments.size(); ++s)
    per_segment[s].s1 =
        static_cast<float>(lr * lamb_ratio(o, std::sqrt(sums[s][0]), std::sqrt(sums[s][1])));
  lamb_update(launch(per_segment), w, m.data(), v.data(), k);
}

DeviceOptimizer::DeviceOptimizer(const lbt::cuda::Gpu&, const OptimizerOptions& options,
                                 std::vector<Segment> segments, std::size_t num_params)
    : impl_(std::make_unique<Impl>(options, std::move(segments), num_params)) {}

DeviceOptimizer::~DeviceOptimizer() = default;

void DeviceOptimizer::step(float* params, const float* grads, double lr, std::int64_t step) {
  const std::string& name = impl_->options.name;
  if (name == "lars") return impl_->lars_step(params, grads, lr);
  if (name == "lamb") return impl_->lamb_step(params, grads, lr, step);
  if (name == "larc") return impl_->larc_step(params, grads, lr, step);
  impl_->base_step(params, grads, lr, step, impl_->coupled_decay());
}

namespace {
template <class Impl>
auto* state_buffer(Impl& impl, const std::string& name) {
  auto* buffer = name == "momentum" ? &impl.momentum
                 : name == "m"      ? &impl.m
                 : name == "v"      ? &impl.v
                                    : nullptr;
  return buffer && buffer->size() ? buffer : nullptr;
}
}  // namespace

std::vector<float> DeviceOptimizer::state(const std::string& name) const {
  const auto* buffer = state_buffer(*impl_, name);
  return buffer ? buffer->download() : std::vector<float>{};
}

void DeviceOptimizer::set_state(const std::string& name, std::span<const float> values) {
  auto* buffer = state_buffer(*impl_, name);
  if (!buffer || buffer->size() != values.size())
    throw Error("the GPU optimizer keeps no state '" + name + "' of " +
                std::to_string(values.size()) + " floats");
  buffer->upload(values);
}

}  // namespace lbt::optim::cuda
