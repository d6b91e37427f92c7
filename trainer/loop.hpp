// The data-parallel training loop (docs/DESIGN.md "One training step").
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/model.hpp"
#include "noise/online_estimator.hpp"
#include "optim/optimizer.hpp"
#include "schedules/scaling.hpp"
#include "schedules/schedule.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/config/train_config.hpp"
#include "trainer/data/load.hpp"
#include "trainer/data/sampler.hpp"
#include "trainer/device_step.hpp"
#include "trainer/divergence.hpp"
#include "trainer/run_dir.hpp"
#include "trainer/snapshot.hpp"

namespace lbt::trainer {

// A metric never measured (no evaluation before the run ended, no finite loss before it
// diverged) is NaN here and null in summary.json: never 0, which reads as a measured value.
inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

struct Evaluation {
  double loss = 0.0;               // mean loss per example (regression: 1/2 sum_j err_j^2)
  double accuracy = kNotMeasured;  // classification
  // Regression, as sklearn's mean_squared_error and r2_score (multioutput="uniform_average"):
  // mse = mean of (pred - y)^2 over all n x k values; r2 = mean over outputs j of
  // 1 - SSE_j / SST_j, SST_j about the evaluated targets' own mean.
  double mse = kNotMeasured, r2 = kNotMeasured;
  // The sample standard deviations over the examples of each one's loss and (regression) each
  // one's mean squared error: with `count`, the resolution of `loss` and `mse` (mean_interval).
  double loss_sd = kNotMeasured, mse_sd = kNotMeasured;
  // Regression: the standard deviation of R^2's linearisation over the examples (the delta
  // method: R^2 is a ratio of two means, each output's SSE and SST per example), so that
  // r2_sd / sqrt(count) is R^2's standard error (r2_interval).
  double r2_sd = kNotMeasured;
  bool regression = false;
  std::int64_t count = 0;
  // The value of a train.target metric (val_accuracy, val_loss, val_mse, val_r2); NaN if
  // this task does not measure it.
  double metric(const std::string& name) const;
};

// Sharded evaluation: rank r takes examples r, r + K, ...; sums (per output for regression)
// are allreduced, and the metrics computed from them, so any K gives 1 rank's numbers.
Evaluation evaluate(nn::Model& model, const data::Dataset& data, comm::Communicator& comm,
                    std::int64_t eval_batch);

// A classification split's sums over some of its examples (the losses, the argmax hits, the
// examples), to be added over the ranks before the metrics are made from them.
struct ClassificationSums {
  double loss = 0.0, correct = 0.0, count = 0.0;
  double loss_squares = 0.0;  // the sum of each example's loss squared
};
// Loss and accuracy per example from the sums of the whole split (an empty split: accuracy 0).
Evaluation classification_evaluation(const ClassificationSums& sums);

// A 95% interval of a metric measured on a validation split: the resolution the split's size
// gives (its sampling of the population).
struct Interval95 {
  double low = 0.0, high = 0.0;
};

// The 95% Wilson score interval (Wilson 1927) of an accuracy measured on n examples, within
// [0, 1]; [NaN, NaN] for n = 0 or an accuracy not measured.
Interval95 accuracy_interval(double accuracy, std::int64_t n);

// The 95% interval of a mean over n examples of a quantity that is never negative (a loss, a
// squared error), from their sample standard deviation: mean +- 1.96 sd / sqrt(n) (the central
// limit theorem; the validation split's sampling of the population), its lower end held at 0.
// [NaN, NaN] for n < 2 or a mean or sd not measured.
Interval95 mean_interval(double mean, double sd, std::int64_t n);

// The 95% interval of R^2 measured on n examples: r2 +- 1.96 sd / sqrt(n) with sd
// Evaluation::r2_sd, its upper end held at 1 (R^2 may be negative). [NaN, NaN] for n < 2 or an
// r2 or sd not measured.
Interval95 r2_interval(double r2, double sd, std::int64_t n);

// The sample standard deviation of n values from their sum and sum of squares (NaN for n < 2).
double sample_sd(double sum, double squares, double n);

// Rank r's contiguous share of n examples over `ranks`: [r n / ranks, (r + 1) n / ranks), the
// shares in rank order tiling [0, n) (how a device rank scores its part of the split).
struct ExampleRange {
  std::int64_t begin = 0, end = 0;
};
ExampleRange contiguous_share(std::int64_t n, int rank, int ranks);

struct TrainOutcome {
  // reached_target | budget_exhausted | completed | diverged | pruned (train.prune_at_step)
  // | interrupted (SIGINT/SIGTERM)
  std::string status = "running";
  std::int64_t steps = 0, total_steps = 0;
  std::int64_t examples = -1;  // the sum of the steps' global batches (-1: steps x global_batch)
  std::int64_t last_global_batch = -1;  // the last step's (an adaptive batch's end; -1: none)
  // Steps-to-result under train.target_definition: the first evaluated step meeting the target
  // (steps_hi); steps_lo is the last evaluated step below it (0: none), so the definition's
  // first step lies in (steps_lo, steps_to_target]. Before the crossing steps_lo tracks the
  // last evaluation.
  std::int64_t steps_to_target = -1, examples_to_target = -1, steps_lo = 0;
  int refinement_evals = 0;  // evaluations the bracket's refinement added
  // The first evaluated step at which the other reading (train.target_definition's other
  // one: raw weights for ema, the EMA for first_passage) met the target (-1: not yet); with
  // stop_at_target the run ends when both have met (or the other has had twice the
  // definition's steps), so summary.json records both.
  std::int64_t other_hi = -1;
  double best_val_accuracy = kNotMeasured, best_val_loss = kNotMeasured;
  double final_val_accuracy = kNotMeasured, final_val_loss = kNotMeasured, last_loss = kNotMeasured;
  double best_val_mse = kNotMeasured, best_val_r2 = kNotMeasured;  // regression
  double final_val_mse = kNotMeasured, final_val_r2 = kNotMeasured;
  // Over the final evaluation's examples (Evaluation::loss_sd, mse_sd): the final values' spread;
  // and over the examples of the evaluation that gave the best loss (mse).
  double final_val_loss_sd = kNotMeasured, final_val_mse_sd = kNotMeasured;
  double best_val_loss_sd = kNotMeasured, best_val_mse_sd = kNotMeasured;
  double final_val_r2_sd = kNotMeasured, best_val_r2_sd = kNotMeasured;  // Evaluation::r2_sd
  std::int64_t diverged_step = -1, skipped_steps = 0;
  double last_finite_loss = kNotMeasured;
  std::string divergence_reason;
  int interrupt_signal = 0;  // interrupted: SIGINT or SIGTERM
  double wall_time_s = 0.0, samples_per_s = 0.0;
  // Each metrics.jsonl window's samples/s (train.log_every steps, with any evaluation or
  // checkpoint that fell in it), this process's: the timing's spread beside the run's mean.
  std::vector<double> window_samples_per_s;
};

// What the loop carries from step to step besides parameters and optimizer state; saved in
// checkpoints so a resumed run continues exactly where it stopped.
// The state at the last evaluation below the target (outcome.steps_lo): where the target
// refinement replays from. Kept in checkpoints while the target is unmet, so a run resumed
// between that evaluation and the crossing refines it as the uninterrupted run does.
struct BelowTargetState {
  std::int64_t step = 0;
  DivergenceState divergence;
  ModelSnapshot model;
  std::vector<float> ema;  // the weights' EMA and the step of its last update
  std::int64_t ema_updated = 0;
};

struct LoopState {
  std::int64_t step = 0;            // optimizer steps done
  DivergenceState divergence;       // first loss, spikes skipped
  double last_val_accuracy = -1.0;  // the progress line's: accuracy, or val_mse (regression)
  TrainOutcome outcome;             // best/final metrics and steps-to-target so far
  std::vector<double> noise_state;  // OnlineEstimator::save_state() at `step`
  std::shared_ptr<const BelowTargetState> below_target;  // null: none (reached, or not kept)
  // An evaluation came within train.target_band of the target without meeting it: a later one
  // clearly short again no longer moves below_target (the metric may have met it in between).
  bool near_target = false;
  // The sum of the global batches of the steps done: the data position and, with an adaptive
  // batch, the schedule's (adaptive_batch.hpp).
  std::int64_t examples_seen = 0;
  std::int64_t batch_accum = 0;  // adaptive: the next step's accumulation count (0: not yet set)
  // The weights' EMA (train.ema_horizon; kept while a target is set, empty otherwise) and the
  // step of its last update.
  std::vector<float> ema;
  std::int64_t ema_updated = 0;
  // The step of the next evaluation (0: from the step's cadence): kept, since the evaluations
  // on the reading's grid depend on the last one, which a resumed step cannot tell.
  std::int64_t next_eval = 0;
};

struct TrainContext {
  const TrainConfig& config;
  nn::Model& model;
  optim::Optimizer& optimizer;
  const schedules::Schedule& schedule;
  comm::Communicator& comm;
  const data::Splits& data;
  data::ShardedSampler sampler;
  std::int64_t total_steps = 0;
  RunDirectory* run_dir = nullptr;  // rank 0 only
  bool progress = false;            // live progress line on stderr
  noise::OnlineOptions noise;       // online gradient-noise-scale estimate (noise.jsonl)
  // Called at the top of every step, before any gradient work (grads are free to use);
  // e.g. the Hessian-weighted B_noise probe of `lbt noise`. Empty: nothing.
  std::function<void(std::int64_t step)> probe;
  LoopState resume_from;  // step 0 for a fresh run
  // Called on every rank after step `state.step` when it is a multiple of checkpoint_every
  // or checkpoint_every_seconds have passed, and after the last step (also when interrupted);
  // writes a checkpoint (rank 0) from the model/optimizer state.
  std::int64_t checkpoint_every = 0;
  // Also after the first step ending this many seconds (rank 0's clock) after the previous
  // checkpoint or the start; 0: off.
  double checkpoint_every_seconds = 0.0;
  std::function<void(const LoopState& state)> checkpoint;
  // Sharded step (sharded_step.hpp): the parameters are one copy shared by the node's ranks,
  // this rank updates the segments in update_segments (its range) and a barrier ends the step.
  // False: every rank updates all of its own copy.
  bool shared_params = false;
  std::vector<Segment> update_segments;
  // Adaptive batch: schedule.scaling, applied at each step's batch relative to the batch the
  // schedule was built for (config.global_batch = batch_min).
  schedules::ScalingRule lr_scaling = schedules::ScalingRule::kNone;
  // model.device other than cpu: the device that computes each step (device_step.hpp), with the
  // model and optimizer above as its host mirror. nullptr: the host computes.
  DeviceStep* device = nullptr;
};

TrainOutcome train(TrainContext& context);

}  // namespace lbt::trainer
