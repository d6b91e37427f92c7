// Online noise-scale estimation during training; see online_estimator.hpp.
#include "noise/online_estimator.hpp"

#include "noise/noise_keys.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"

namespace lbt::noise {

std::size_t OnlineOptions::window() const {
  return static_cast<std::size_t>(std::max<std::int64_t>(1, window_steps / every));
}

OnlineOptions read_online_options(Config& c) {
  const auto key = [](std::string_view name) -> const KeySpec& {
    return Schema::in(noise_keys(), name);
  };
  OnlineOptions o;
  o.enabled = c.get_bool(key("noise.enabled"));
  o.every = c.get_int(key("noise.every"));
  const std::string est = c.get_string(key("noise.estimator"));
  o.ema = c.get_double(key("noise.ema"));
  o.per_segment = c.get_bool(key("noise.per_segment"));
  o.window_steps = c.get_int(key("noise.window_steps"));
  const std::string small = c.get_string(key("noise.small_batches"));
  // (Before, "first" left the default "all" in place: accepted and silently ignored.)
  o.small_batches = small;
  o.all_micro_batches = small != "first";  // auto: trainer::resolve_run_config decides
  if (small != "auto" && small != "all" && small != "first")
    c.fail("noise.small_batches", "one of: auto, first, all", "'" + small + "'");
  if (est == "two_batch")
    o.per_example = false;
  else if (est == "per_example")
    o.two_batch = false;
  else if (est != "both")
    c.fail("noise.estimator", "one of: two_batch, per_example, both", "'" + est + "'");
  if (o.every <= 0) c.fail("noise.every", "> 0", std::to_string(o.every), "e.g. noise.every = 10");
  // The "now" estimate is the window's line at its last step: three measurements make a line
  // with a residual (n - 2 degrees of freedom). At 2 x every it was never reported.
  constexpr std::int64_t kLine = NoiseScaleTracker::kLineSamples;
  if (o.window_steps < kLine * o.every && !c.has("noise.window_steps")) {  // the default window
    c.fail("noise.every",
           "at most noise.window_steps / 3 = " + std::to_string(o.window_steps / kLine) +
               " (the window's line and its interval need three measurements)",
           std::to_string(o.every), "lower noise.every, or set noise.window_steps >= 3 x it");
  }
  if (o.window_steps < kLine * o.every) {
    c.fail("noise.window_steps",
           "at least 3 x noise.every = " + std::to_string(kLine * o.every) +
               " (the window's line and its interval need three measurements)",
           std::to_string(o.window_steps), "e.g. noise.window_steps = 10 x noise.every");
  }
  if (!(o.ema >= 0.0 && o.ema < 1.0)) {
    c.fail("noise.ema", "in [0, 1)", std::to_string(o.ema), "e.g. 0.95; 0 disables smoothing");
  }
  return o;
}

OnlineEstimator::OnlineEstimator(const OnlineOptions& options, int world_size,
                                 std::int64_t micro_batch, std::int64_t accum,
                                 std::span<const Segment> segments,
                                 const PerExampleSupport& support, const Device& device)
    : options_(options),
      segments_(segments.begin(), segments.end()),
      num_segments_(segments.size()),
      micro_batch_(micro_batch),
      accum_(accum),
      world_size_(world_size) {
  B_big_ = static_cast<double>(world_size) * micro_batch * accum;
  grad_scale_ = 1.0 / static_cast<double>(micro_batch * accum);
  small_sq_.assign(num_segments_, 0.0);
  example_sq_.assign(num_segments_, 0.0);
  big_sq_.assign(num_segments_, 0.0);
  if (!options_.enabled) return;
  require_host_memory(device, "the noise estimator's hooks");
  method_ = choose_method(options_, world_size, micro_batch, accum, support);
  options_.per_example = method_.per_example;
  if (method_.two_batch) {
    b_small_ = method_.b_small;
    if (world_size >= 2) {
      // each rank's local gradient is a small batch: free, one read of the buffer
      small_ = SmallBatch::kRankLocal;
    } else {
      // one process: each micro-batch is a small batch, read off the accumulation buffer
      small_ = SmallBatch::kMicroBatch;
      if (options_.all_micro_batches) {
        std::size_t n = 0;
        for (const Segment& s : segments_) n = std::max(n, s.offset + s.size);
        previous_ = device.allocate(n);
      }
    }
  } else if (options_.two_batch) {
    note_ =
        "noise: the two_batch estimator needs a small batch and there is none: one process "
        "with train.accum_steps = 1. Set train.accum_steps >= 2 (micro-batches become the "
        "small batches) or run on >= 2 ranks. The per_example estimator still runs.";
  }
  auto add = [&](const char* name, double b) {
    EstimatorReport r;
    r.name = name;
    r.b_small = b;
    r.B_big = B_big_;
    if (options_.per_segment) r.segments.resize(num_segments_);
    report_.estimators.push_back(std::move(r));
    trackers_.emplace_back(options_.ema, options_.window());
    seg_trackers_.emplace_back(options_.per_segment ? num_segments_ : 0,
                               NoiseScaleTracker(options_.ema, options_.window()));
    return static_cast<int>(report_.estimators.size()) - 1;
  };
  if (small_ != SmallBatch::kNone) two_batch_index_ = add("two_batch", b_small_);
  if (options_.per_example) per_example_index_ = add("per_example", 1.0);
  if (options_.per_segment) {
    for (const Segment& s : segments_) report_.segment_names.push_back(s.name);
  }
}

HostGradientReader OnlineEstimator::host_reader(std::span<const float> grads) {
  return HostGradientReader(grads, segments_, previous_.data());
}

void OnlineEstimator::after_micro_batch(std::int64_t step, std::span<const float> grads,
                                        ExampleTaps taps) {
  HostGradientReader reader = host_reader(grads);
  after_micro_batch(step, reader, taps);
}

void OnlineEstimator::after_micro_batch(std::int64_t step, GradientReader& grads,
                                        ExampleTaps taps) {
  if (!active(step)) return;
  if (small_ == SmallBatch::kMicroBatch) {
    const double scale = static_cast<double>(accum_) * accum_;
    if (!options_.all_micro_batches) {
      // Micro-batch 0 wrote g_0 / accum into the buffer (nothing accumulated yet), so
      // |g_0|^2 = accum^2 |A_0|^2 is one read of memory still in cache. It is an unbiased draw
      // of E|G_small|^2 like any other micro-batch, but one sample a step instead of accum:
      // a noisier estimate for the EMA to smooth.
      if (micro_seen_ == 0) {
        scratch_sq_.resize(num_segments_);
        grads.segment_sq_norms(scratch_sq_);
        for (std::size_t s = 0; s < num_segments_; ++s) small_sq_[s] += scale * scratch_sq_[s];
        small_count_ += 1.0;
      }
    } else {
      // This micro-batch added g_k / accum to the buffer: |g_k|^2 = accum^2 |A_k - A_{k-1}|^2.
      scratch_sq_.resize(num_segments_);
      grads.segment_change_sq_norms(scratch_sq_, micro_seen_ == 0, micro_seen_ + 1 == accum_);
      for (std::size_t s = 0; s < num_segments_; ++s) small_sq_[s] += scale * scratch_sq_[s];
      small_count_ += 1.0;
    }
  }
  if (per_example_index_ >= 0 && !taps.segment_sums.empty()) {
    if (taps.segment_sums.size() != num_segments_)
      throw Error("per-example sums: " + std::to_string(taps.segment_sums.size()) +
                  " segments, the model has " + std::to_string(num_segments_));
    for (std::size_t s = 0; s < num_segments_; ++s) example_sq_[s] += taps.segment_sums[s];
    example_count_ += static_cast<double>(micro_batch_);
  } else if (per_example_index_ >= 0) {
    if (!taps_checked_) {
      std::vector<bool> covered(num_segments_, false);
      for (const LinearTap& t : taps.linear) {
        covered[t.weight_segment] = true;
        if (t.bias_segment >= 0) covered[static_cast<std::size_t>(t.bias_segment)] = true;
      }
      for (const ConvTap& t : taps.conv) {
        covered[t.weight_segment] = true;
        if (t.bias_segment >= 0) covered[static_cast<std::size_t>(t.bias_segment)] = true;
      }
      for (std::size_t s = 0; s < num_segments_; ++s) {
        if (!covered[s] && segments_[s].size > 0) {
          throw ConfigError("noise.estimator = per_example: parameter '" + segments_[s].name +
                                "' is not in a Linear or Conv2d layer, so its per-example norms "
                                "are unknown",
                            "use noise.estimator = \"two_batch\" for this model");
        }
      }
      taps_checked_ = true;
    }
    add_per_example_sq_norms(taps.linear, micro_batch_, grad_scale_, example_sq_);
    add_conv_per_example_sq_norms(taps.conv, micro_batch_, grad_scale_, example_sq_);
    example_count_ += static_cast<double>(micro_batch_);
  }
  ++micro_seen_;
}

void OnlineEstimator::before_allreduce(std::int64_t step, std::span<const float> grads,
                                       std::span<double> slots) {
  HostGradientReader reader = host_reader(grads);
  before_allreduce(step, reader, slots);
}

void OnlineEstimator::before_allreduce(std::int64_t step, GradientReader& grads,
                                       std::span<double> slots) {
  std::fill(slots.begin(), slots.end(), 0.0);
  if (!active(step)) return;
  if (small_ == SmallBatch::kRankLocal) {
    grads.segment_sq_norms(small_sq_);  // this rank's gradient, before averaging
    small_count_ = 1.0;
  }
  // slots: [sum |g_small|^2, #small batches, sum |g_n|^2, #examples, per segment: small, examples]
  slots[0] = std::accumulate(small_sq_.begin(), small_sq_.end(), 0.0);
  slots[1] = small_count_;
  slots[2] = std::accumulate(example_sq_.begin(), example_sq_.end(), 0.0);
  slots[3] = example_count_;
  std::copy(small_sq_.begin(), small_sq_.end(), slots.begin() + 4);
  std::copy(example_sq_.begin(), example_sq_.end(), slots.begin() + 4 + num_segments_);
}

void OnlineEstimator::update(EstimatorReport& r, std::vector<NoiseScaleTracker>& seg_trackers,
                             NoiseScaleTracker& tracker, const NoiseEstimate& total,
                             std::span<const double> seg_small, double count, bool per_example) {
  r.step = total;
  tracker.add(total);
  r.now = tracker.now();
  r.smoothed = tracker.averaged();
  if (!options_.per_segment) return;
  for (std::size_t s = 0; s < num_segments_; ++s) {
    const double small = seg_small[s] / count;
    seg_trackers[s].add(per_example ? per_example_estimate(count, small, big_sq_[s])
                                    : two_batch_estimate(b_small_, small, B_big_, big_sq_[s]));
    r.segments[s] = seg_trackers[s].averaged();
  }
}

const NoiseReport* OnlineEstimator::after_allreduce(std::int64_t step, std::span<const float> grads,
                                                    double grad_norm,
                                                    std::span<const double> slots) {
  HostGradientReader reader = host_reader(grads);
  return after_allreduce(step, reader, grad_norm, slots);
}

const NoiseReport* OnlineEstimator::after_allreduce(std::int64_t step, GradientReader& grads,
                                                    double grad_norm,
                                                    std::span<const double> slots) {
  if (!active(step)) return nullptr;
  const double g_big_sq = grad_norm * grad_norm;  // |G_B|^2 of the global mean gradient
  if (options_.per_segment) grads.segment_sq_norms(big_sq_);
  report_.step = step;
  if (two_batch_index_ >= 0 && slots[1] > 0.0) {
    const double g_small_sq = slots[0] / slots[1];  // mean over all small batches of all ranks
    update(report_.estimators[two_batch_index_], seg_trackers_[two_batch_index_],
           trackers_[two_batch_index_], two_batch_estimate(b_small_, g_small_sq, B_big_, g_big_sq),
           slots.subspan(4, num_segments_), slots[1], false);
  }
  if (per_example_index_ >= 0 && slots[3] > 1.0) {
    update(report_.estimators[per_example_index_], seg_trackers_[per_example_index_],
           trackers_[per_example_index_],
           per_example_estimate(slots[3], slots[2] / slots[3], g_big_sq),
           slots.subspan(4 + num_segments_, num_segments_), slots[3], true);
  }
  discard_step();
  return &report_;
}

void OnlineEstimator::discard_step() {
  std::fill(small_sq_.begin(), small_sq_.end(), 0.0);
  std::fill(example_sq_.begin(), example_sq_.end(), 0.0);
  small_count_ = example_count_ = 0.0;
  micro_seen_ = 0;
}

std::vector<double> OnlineEstimator::save_state() const {
  std::vector<double> out;
  auto append = [&](const NoiseScaleTracker& t) {
    out.resize(out.size() + t.state_size());
    t.save_state(std::span<double>(out.data() + out.size() - t.state_size(), t.state_size()));
  };
  for (std::size_t e = 0; e < trackers_.size(); ++e) {
    append(trackers_[e]);
    for (const auto& t : seg_trackers_[e]) append(t);
  }
  return out;
}

void OnlineEstimator::load_state(std::span<const double> state) {
  std::size_t size = 0;
  for (std::size_t e = 0; e < trackers_.size(); ++e) {
    size += trackers_[e].state_size();
    for (const auto& t : seg_trackers_[e]) size += t.state_size();
  }
  if (state.size() != size) {
    throw DataError("the checkpoint's noise-estimator state holds " + std::to_string(state.size()) +
                        " values; this run's estimators need " + std::to_string(size),
                    "resume with the run's own noise.* settings");
  }
  std::size_t at = 0;
  auto take = [&](NoiseScaleTracker& t) {
    t.load_state(state.subspan(at, t.state_size()));
    at += t.state_size();
  };
  for (std::size_t e = 0; e < trackers_.size(); ++e) {
    take(trackers_[e]);
    for (auto& t : seg_trackers_[e]) take(t);
  }
}

const NoiseScale* OnlineEstimator::headline() const {
  if (report_.estimators.empty()) return nullptr;
  return &report_.estimators.front().now;
}

const NoiseScale* OnlineEstimator::averaged() const {
  if (report_.estimators.empty()) return nullptr;
  return &report_.estimators[averaged_index()].smoothed;
}

std::size_t OnlineEstimator::averaged_index() const {
  if (per_example_index_ >= 0 && report_.estimators[per_example_index_].smoothed.resolved)
    return static_cast<std::size_t>(per_example_index_);
  if (two_batch_index_ >= 0 && report_.estimators[two_batch_index_].smoothed.resolved)
    return static_cast<std::size_t>(two_batch_index_);
  return 0;
}

// The sizes choose_method derives from the layout, for the new accumulation count.
void OnlineEstimator::set_accum(std::int64_t accum) {
  accum_ = accum;
  B_big_ = static_cast<double>(world_size_) * micro_batch_ * accum;
  grad_scale_ = 1.0 / static_cast<double>(micro_batch_ * accum);
  if (small_ == SmallBatch::kRankLocal) b_small_ = static_cast<double>(micro_batch_ * accum);
  method_.B_big = B_big_;
  if (method_.two_batch) method_.b_small = b_small_;
  for (EstimatorReport& r : report_.estimators) {
    r.B_big = B_big_;
    if (r.name == "two_batch") r.b_small = b_small_;
  }
}

}  // namespace lbt::noise
