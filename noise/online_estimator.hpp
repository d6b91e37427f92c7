// The gradient noise scale measured during training (McCandlish et al. 2018, arXiv:1812.06162,
// App. A.1): the trainer calls three hooks per step and gets a report every `noise.every` steps.
//   two_batch:   small batch = a rank's local gradient (>= 2 ranks) or micro-batches of
//                gradient accumulation (one process, accum >= 2: all of them, or the first
//                with noise.small_batches = "first"); big batch = the global batch.
//   per_example: exact per-example gradient norms of Linear and Conv2d layers over the global
//                batch, where examples do not interact (no BatchNorm).
// choose_method picks what runs in a layout and says why; both feed NoiseScaleTracker (EMA of |G|^2
// and tr(Sigma), B_simple with a 95% interval).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/params.hpp"
#include "core/tensor.hpp"
#include "noise/gradient_noise.hpp"
#include "noise/gradient_reader.hpp"
#include "noise/per_example.hpp"
#include "noise/per_example_conv.hpp"

namespace lbt::noise {

struct OnlineOptions {
  bool enabled = false;
  std::int64_t every = 10;  // measure on steps with step % every == 0
  bool two_batch = true, per_example = true;
  // One process with accumulation: the small batches are micro-batches. `all` uses every one
  // (accum samples a step: the within-step sample variance, accum - 1 degrees of freedom);
  // `first` reads only micro-batch 0's gradient: one read of the buffer, no parameter-sized
  // copy, a quarter of the memory traffic, but one sample a step. At accum 2 that doubles the
  // variance of a step's |G|^2 estimate (all: g_0.g_1; first: g_0.g_1 + (|g_1|^2 - |g_0|^2)/2)
  // for a third of the cost (bench/noise_overhead.cpp), so per unit of precision `first` is the
  // cheaper form there; with k >= 3 micro-batches `all` averages k(k-1)/2 products and wins.
  // "auto" (trainer::resolve_run_config) picks by that; `lbt noise` measures with `all`.
  bool all_micro_batches = true;
  std::string small_batches = "auto";  // as configured: auto | all | first
  double ema = NoiseScaleTracker::kDefaultBeta;
  std::int64_t window_steps = 100;  // the "now" estimate: measurements of the last N steps
  bool per_segment = false;         // also report B_simple per parameter tensor
  std::string layout_note;          // set by lbt noise when it chose the batch layout itself
  // The method and layout on stderr at the start (lbt noise's report gives them instead).
  bool announce = true;
  std::size_t window() const;  // measurements in the "now" window: window_steps / every
};

// Reads and validates the `noise.*` keys.
OnlineOptions read_online_options(Config& config);

// Whether per-example norms are exact for a model: every parameter sits in a Linear or Conv2d
// layer and no layer mixes the examples of a batch (BatchNorm does). trainer/noise_log.cpp
// decides it from the model.
struct PerExampleSupport {
  bool exact = true;
  std::string reason;  // why not, naming the layer or parameter ("" when exact)
};

// The estimators that run in a layout, and why (noise.jsonl's first line, the console).
struct NoiseMethod {
  bool two_batch = false, per_example = false;
  double b_small = 0.0, B_big = 0.0;  // two_batch's batch sizes (examples)
  std::string name;                   // "two_batch", "per_example" or "two_batch+per_example"
  std::string reason;                 // one sentence: the small batches, what is off and why
};

// Chooses from what `options` asks for: two_batch needs a small batch (>= 2 ranks, or one
// process with accum >= 2); per_example needs support.exact. An estimator asked for by name
// that cannot run, or none at all, is a ConfigError naming the fix (checked before training).
NoiseMethod choose_method(const OnlineOptions& options, int world_size, std::int64_t micro_batch,
                          std::int64_t accum, const PerExampleSupport& support);

// The per-example estimator's view of one micro-batch: the Linear and Conv2d layers, or the
// per-segment sums of |g_n|^2 over its examples already made where the activations live (a
// device's, noise/cuda/per_example_sums.hpp; [num_segments], covering every segment).
struct ExampleTaps {
  std::span<const LinearTap> linear;
  std::span<const ConvTap> conv;
  std::span<const double> segment_sums;
};

// One estimator's view at a report step.
struct EstimatorReport {
  std::string name;                   // "two_batch" | "per_example"
  double b_small = 0.0, B_big = 0.0;  // batch sizes (per_example: b_small = 1)
  NoiseEstimate step;                 // this step's unbiased estimates
  NoiseScale now;                     // B_simple over the last noise.window_steps steps
  NoiseScale smoothed;                // EMAs (averaged over training), B_simple, interval
  std::vector<NoiseScale> segments;   // per segment when per_segment is on
};

struct NoiseReport {
  std::int64_t step = 0;  // 0-based: the gradient at the parameters after `step` updates
  std::vector<EstimatorReport> estimators;
  std::vector<std::string> segment_names;
};

class OnlineEstimator {
 public:
  // @param world_size   data-parallel ranks
  // @param micro_batch  examples per forward/backward on one rank
  // @param accum        micro-batches per optimizer step
  // @param segments     the model's segment table (per-segment norms, per_example taps)
  // @param support      whether per-example norms are exact for the model (choose_method)
  // Its gradient copy (small_batches = "all") is allocated on `device`, the model's backend;
  // the hooks read host memory and refuse another device.
  OnlineEstimator(const OnlineOptions& options, int world_size, std::int64_t micro_batch,
                  std::int64_t accum, std::span<const Segment> segments,
                  const PerExampleSupport& support = {}, const Device& device = host_device());

  bool active(std::int64_t step) const { return options_.enabled && step % options_.every == 0; }
  // Doubles the trainer adds to its metrics allreduce (kSum); see before_allreduce.
  std::size_t num_slots() const { return 4 + 2 * num_segments_; }

  // After each micro-batch's backward: `grads` holds the accumulated gradient so far, `taps`
  // the Linear and Conv2d layers' inputs and output deltas of this micro-batch.
  void after_micro_batch(std::int64_t step, std::span<const float> grads, ExampleTaps taps);
  // The reader the span overloads use: the host's buffer `grads` with the estimator's copy of
  // the previous micro-batch's gradient.
  HostGradientReader host_reader(std::span<const float> grads);
  // The same on a gradient a GradientReader reads (a device's, with its per-example sums).
  void after_micro_batch(std::int64_t step, GradientReader& grads, ExampleTaps taps = {});
  // Before the gradient allreduce: writes this rank's sums into `slots` ([num_slots()]).
  void before_allreduce(std::int64_t step, std::span<const float> grads, std::span<double> slots);
  void before_allreduce(std::int64_t step, GradientReader& grads, std::span<double> slots);
  // After the allreduce (grads = global mean gradient, slots summed over ranks). Returns the
  // report on active steps, else nullptr. grad_norm: |G_B|, which the trainer already has.
  const NoiseReport* after_allreduce(std::int64_t step, std::span<const float> grads,
                                     double grad_norm, std::span<const double> slots);
  const NoiseReport* after_allreduce(std::int64_t step, GradientReader& grads, double grad_norm,
                                     std::span<const double> slots);
  // Instead of after_allreduce, for a step whose gradient is not used (a skipped spike):
  // drops this step's sums, leaves the EMAs as they were.
  void discard_step();

  // Non-empty when an estimator that was asked for cannot run in this layout (said once).
  const std::string& note() const { return note_; }
  // What runs and why (enabled only).
  const NoiseMethod& method() const { return method_; }
  // Whether the per-example estimator runs (it reads ExampleTaps on active steps).
  bool per_example_running() const { return per_example_index_ >= 0; }
  const OnlineOptions& options() const { return options_; }
  // Every tracker's running sums in a fixed order, for checkpoints; load_state refuses
  // (DataError) a state saved with different estimators or segments.
  std::vector<double> save_state() const;
  void load_state(std::span<const double> state);

  // The headline B_simple "now" (two_batch if available, else per_example); NaN before any.
  const NoiseScale* headline() const;
  // The EMA ("averaged", bias-corrected) B_simple that steers an adaptive batch: per_example's
  // where it runs and is resolved (every example of the batch is a sample), else two_batch's
  // when resolved, else the first estimator's (unresolved); nullptr before any report.
  const NoiseScale* averaged() const;

  // Adaptive batch (trainer/adaptive_batch.hpp): the next steps accumulate `accum` micro-batches,
  // so the big batch (and, on >= 2 ranks, the small one) changes; the EMAs carry on. Called
  // between steps only. One process needs accum >= 2 for two_batch (checked by the caller).
  void set_accum(std::int64_t accum);

 private:
  enum class SmallBatch { kNone, kRankLocal, kMicroBatch };
  std::size_t averaged_index() const;
  void update(EstimatorReport& r, std::vector<NoiseScaleTracker>& seg_trackers,
              NoiseScaleTracker& tracker, const NoiseEstimate& total,
              std::span<const double> seg_small, double small_count, bool per_example);

  OnlineOptions options_;
  std::vector<Segment> segments_;
  std::size_t num_segments_;
  std::int64_t micro_batch_, accum_;
  int world_size_ = 1;
  SmallBatch small_ = SmallBatch::kNone;
  double b_small_ = 0.0, B_big_ = 0.0, grad_scale_ = 1.0;
  std::string note_;
  NoiseMethod method_;

  // this rank's accumulators for the active step: [num_segments] each
  std::vector<double> small_sq_, example_sq_, big_sq_;
  double small_count_ = 0.0, example_count_ = 0.0;
  std::int64_t micro_seen_ = 0;
  bool taps_checked_ = false;
  AlignedBuffer
      previous_;  // all_micro_batches only: [num_params], grads after the last micro-batch
  std::vector<double> scratch_sq_;  // [num_segments]

  NoiseReport report_;  // estimators in order: two_batch (if run), per_example (if run)
  int two_batch_index_ = -1, per_example_index_ = -1;
  std::vector<NoiseScaleTracker> trackers_;                   // parallel to report_.estimators
  std::vector<std::vector<NoiseScaleTracker>> seg_trackers_;  // [estimator][segment]
};

}  // namespace lbt::noise
