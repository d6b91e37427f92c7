// The training loop's object, private to trainer/loop.cpp (the step and the run),
// trainer/loop_batch.cpp (the batch and the data position) and trainer/loop_evaluation.cpp
// (evaluations, steps-to-target and its refinement); other code calls trainer::train (loop.hpp).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/batch_steps.hpp"
#include "trainer/data/prefetch.hpp"
#include "trainer/evaluation.hpp"
#include "trainer/loop.hpp"
#include "trainer/noise_log.hpp"
#include "trainer/progress.hpp"
#include "trainer/step_sums.hpp"
#include "trainer/target_reading.hpp"

namespace lbt::trainer::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One run of the loop: the state a step reads and writes besides the model and optimizer.
class TrainLoop {
 public:
  explicit TrainLoop(TrainContext& ctx);
  TrainOutcome run();

 private:
  struct StepResult {
    StepVerdict verdict;
    double loss, grad_norm, lr;
    std::int64_t global_batch;  // this step's examples over all ranks
    bool stop, checkpoint_due, noise_reported;
    bool batch_changed;       // adaptive or steps: the next step's batch differs from this one's
    std::string skip_reason;  // why judge_step skipped or stopped
  };
  enum class Continue { kGoOn, kStop };

  // The step and its parts (loop.cpp).
  StepResult step(std::int64_t step, bool replay);
  void forward_backward(std::int64_t step, bool replay);
  double host_forward_backward(std::int64_t step, std::int64_t micro, const data::Batch& batch,
                               bool replay, std::int64_t* correct);
  double device_forward_backward(std::int64_t step, std::int64_t micro, const data::Batch& batch,
                                 bool replay, std::int64_t* correct);
  StepResult reduce(std::int64_t step, bool replay);
  StepVerdict judge(std::int64_t step, StepResult& r);
  bool update_noise(std::int64_t step, const StepResult& r);
  void apply_update(std::int64_t step, const StepResult& r, bool replay);
  void sync_parameters(std::int64_t step);
  void share_layer_buffers();
  void keep_layer_buffers();
  void restore_layer_buffers();
  void measure_initial_loss();
  void start_overlap();
  void log_step(const StepResult& r);
  bool checkpoint_due(const StepResult& r) const;
  std::string final_status() const;

  // The batch, its LR and the data position (loop_batch.cpp).
  double lr_at(std::int64_t step) const;
  bool next_batch(const StepResult& r, bool replay);  // true: the batch changed
  bool adapt_batch(const StepResult& r);              // adaptive: from the noise scale
  void set_accum(std::int64_t accum);
  void start_data_at(std::int64_t step);
  double epoch_now() const;

  // Evaluations and the target's crossing (loop_evaluation.cpp).
  Continue evaluate_if_due();
  std::int64_t next_evaluation(std::int64_t step) const;
  // The crossing is refined on the reading's grid (not under an adaptive batch, nor at
  // train.target_resolution = 1).
  bool refines() const { return !follows_noise_ && cfg_.target_resolution < 1.0; }
  bool evaluate_now(bool refinement);  // true: the target is met
  void keep_best_and_final(const Evaluation& e);
  void refine_crossing();
  void take_lo_snapshot();
  void restore_model(const ModelSnapshot& snapshot);
  void restore(const ModelSnapshot& snapshot, const LoopState& state);
  void restore_below_target();
  // The weights' EMA (target_reading.hpp): kept while a target is set.
  bool ema_on() const { return cfg_.target.enabled(); }
  void update_ema(std::int64_t steps);
  Evaluation evaluate_ema();
  void swap_ema();

  std::int64_t global_batch_now() const {
    return variable_batch_ ? accum_ * cfg_.adaptive.step_examples : cfg_.global_batch;
  }
  // The examples seen after `steps` steps, where the batches do not depend on the run's
  // measurements (a fixed batch or planned stages): where a replay from that step stands.
  std::int64_t examples_at_step(std::int64_t steps) const {
    return variable_batch_ ? examples_after(cfg_.adaptive.steps, steps) : steps * cfg_.global_batch;
  }
  // A varying batch: the budget is in examples (total_steps x the first batch); the run may end
  // sooner.
  bool examples_budget_spent() const {
    return variable_batch_ && state_.examples_seen >= ctx_.total_steps * cfg_.global_batch;
  }
  bool last_step() const { return out_.steps == ctx_.total_steps || examples_budget_spent(); }
  // Local SGD (local_sgd.hpp): whether every rank holds the same parameters after `steps`
  // steps, and the first such step count >= `steps`. Always true / `steps` when H = 1.
  bool in_sync(std::int64_t steps) const {
    return cfg_.local_sgd.in_sync_after(steps, ctx_.total_steps);
  }
  std::int64_t at_sync(std::int64_t steps) const {
    return cfg_.local_sgd.sync_point_at_or_after(steps, ctx_.total_steps);
  }
  void checkpoint() {
    from_device();
    state_.noise_state = noise_.save_state();
    state_.next_eval = next_eval_;
    ctx_.checkpoint(state_);
  }
  // model.device: the host mirror (model, optimizer state, EMA) made the device's before the
  // loop reads it, and the device's made the host's after the loop restored it.
  void from_device() {
    if (device_) device_->pull(model_, ctx_.optimizer, state_.ema);
  }
  void to_device() {
    if (device_) device_->push(model_, ctx_.optimizer, state_.ema);
  }
  Evaluation evaluate_split(bool ema);
  Evaluation evaluate_on_device(bool ema);
  // This rank's step gradient as the noise estimator reads it: on the device, or the host's.
  noise::GradientReader& gradient_reader() {
    return device_ ? device_->gradient_reader() : host_gradient_;
  }

  TrainContext& ctx_;
  const TrainConfig& cfg_;
  nn::Model& model_;
  ParameterStore& store_;
  DeviceStep* const device_;  // model.device's step, or nullptr (the host computes)
  LoopState state_;
  TrainOutcome& out_;
  const bool variable_batch_ = cfg_.adaptive.enabled;         // adaptive or steps
  const bool follows_noise_ = cfg_.adaptive.follows_noise();  // adaptive: no replay
  std::int64_t accum_;  // micro-batches per step now (fixed: train.accum_steps)
  float grad_scale_;    // mean over this rank's examples
  const data::AugmentOptions augment_;
  std::unique_ptr<data::Prefetcher> prefetch_;
  Progress progress_;
  noise::OnlineEstimator noise_;
  noise::HostGradientReader host_gradient_ = noise_.host_reader(store_.grads());
  TapBuffers taps_;
  // train.overlap_comm: the gradient allreduce in buckets, started from backward's hook
  std::unique_ptr<comm::BucketedAllreduce> overlap_;
  nn::Model::GradsReady grads_ready_;
  std::vector<float> layer_buffers_;  // share_layer_buffers' packed copy (empty: none to share)
  std::vector<float> buffers_before_step_;  // keep_layer_buffers' (empty: none, or a device)
  StepSums sums_;                           // what rides on the step's small allreduce
  Clock::time_point t_start_ = Clock::now(), t_window_ = t_start_, t_checkpoint_ = t_start_;
  std::int64_t window_examples_from_ = state_.examples_seen;
  const std::int64_t examples_at_start_ = state_.examples_seen;  // a resume's or a branch's
  std::int64_t next_eval_ = 0;                                   // the next step that evaluates
  // Seconds the run spent before a resume: the logs' wall_time and summary's go on from it (the
  // logs' restarted at 0 after a resume until 2026-11-29).
  double wall_before_ = 0.0;
  double wall_time() const { return wall_before_ + seconds_since(t_start_); }
  double last_metric_ = kNotMeasured;  // the definition's metric at the last evaluation
  std::int64_t other_seen_ = -1;       // an evaluation at which the other reading met
};

}  // namespace lbt::trainer::detail
