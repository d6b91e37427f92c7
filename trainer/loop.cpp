// The training loop; reads like llm.c's main loop: data -> forward/backward (x accum) ->
// allreduce -> divergence check -> lr -> optimizer step -> log / evaluate. Evaluations and the
// target's crossing are in loop_evaluation.cpp, the batch and data position in loop_batch.cpp;
// the loop's object in train_loop.hpp.
#include "trainer/loop.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/sum_squares.hpp"
#include "trainer/interrupt.hpp"
#include "trainer/local_sgd.hpp"
#include "trainer/train_loop.hpp"

namespace lbt::trainer {
namespace detail {

TrainLoop::TrainLoop(TrainContext& ctx)
    : ctx_(ctx),
      cfg_(ctx.config),
      model_(ctx.model),
      store_(model_.store()),
      device_(ctx.device),
      state_(ctx.resume_from),
      out_(state_.outcome),
      accum_(state_.batch_accum > 0 ? state_.batch_accum : cfg_.accum_steps),
      grad_scale_(1.0f / static_cast<float>(cfg_.micro_batch * accum_)),
      augment_{cfg_.data.augment_crop_padding, cfg_.data.augment_flip, cfg_.seed,
               static_cast<std::uint64_t>(ctx.comm.rank())},
      progress_(ctx.progress && ctx.comm.rank() == 0, ctx.total_steps),
      noise_(ctx.noise, ctx.comm.size(), cfg_.micro_batch, cfg_.accum_steps, store_.segments(),
             per_example_support(model_, cfg_.device), model_.backend()),
      sums_(noise_.num_slots()) {
  if (!device_) model_.reserve(cfg_.micro_batch);
  std::size_t floats = 0;  // share_layer_buffers' and keep_layer_buffers' copies, sized once
  for (std::span<float> b : model_.buffers()) floats += b.size();
  if (ctx.comm.size() > 1) layer_buffers_.resize(floats);
  if (!device_) buffers_before_step_.resize(floats);  // a device keeps its own
  if (cfg_.overlap_comm) start_overlap();
  if (!ctx.data.train.is_classification()) progress_.set_val_label("val_mse");
  out_.total_steps = ctx.total_steps;
  // noise.jsonl's method line is written once, by the fresh run (a resumed one keeps it)
  log_noise_note(noise_, state_.step == 0 ? ctx.run_dir : nullptr, ctx.comm.rank() == 0);
  if (state_.step > 0) noise_.load_state(state_.noise_state);  // resumed: continue the EMAs
  if (variable_batch_) set_accum(accum_);  // resumed mid-change: the batch it had chosen
  start_data_at(state_.step);
}

// train.overlap_comm: backward starts reducing each bucket of the gradient as soon as the last
// micro-batch has finished it. The noise estimator reads this rank's gradient before the
// reduction, which overlap would overwrite: resolve_run_config refuses the two together.
void TrainLoop::start_overlap() {
  overlap_ = ctx_.comm.bucketed_allreduce(store_.grads(), comm::ReduceOp::kAvg, cfg_.bucket_floats);
  if (ctx_.comm.size() > 1 && !overlap_->overlaps()) {
    throw ConfigError(std::string("train.overlap_comm needs the shared-memory reducer (MPI, every "
                                  "rank on one node); this run's transport is ") +
                          ctx_.comm.backend() + " without it",
                      "set train.overlap_comm=false");
  }
  grads_ready_ = [this](std::size_t from) { overlap_->ready(from); };
}

// One optimizer step, as the algorithm reads (docs/DESIGN.md "One training step"). A replayed step
// (the target refinement) computes the same numbers bit for bit but feeds no noise estimate (its
// gradient was counted the first time) and takes no probe. A local SGD step (Lin et al. 2020, Alg.
// 1) skips the gradient allreduce and the noise estimate, which needs it; every H steps
// sync_parameters averages the ranks' models. The probe runs only where every rank holds the same
// parameters.
TrainLoop::StepResult TrainLoop::step(std::int64_t step, bool replay) {
  const bool local = cfg_.local_sgd.local_step(step);
  if (ctx_.probe && !replay && in_sync(step)) ctx_.probe(step);
  keep_layer_buffers();                 // BatchNorm's running statistics before this batch
  forward_backward(step, replay);       // this rank's gradient over accum micro-batches
  StepResult r = reduce(step, replay);  // the global-batch mean gradient, loss and votes
  r.verdict = judge(step, r);           // divergence, on numbers every rank agrees on
  if (r.verdict != StepVerdict::kUpdate) restore_layer_buffers();  // the spike leaves no trace
  if (r.verdict == StepVerdict::kDiverged) return r;
  if (!replay && !local) r.noise_reported = update_noise(step, r);  // the noise scale
  r.lr = lr_at(step);             // the schedule at this data position, scaled to the batch
  apply_update(step, r, replay);  // the optimizer, unless a spike is skipped
  sync_parameters(step);          // local SGD: the ranks' average every H steps
  share_layer_buffers();          // rank 0's BatchNorm running statistics on every rank
  update_ema(step + 1);           // the weights' EMA that steps-to-target reads
  out_.steps = state_.step = step + 1;
  out_.examples = state_.examples_seen += out_.last_global_batch = r.global_batch =
      global_batch_now();
  r.batch_changed = next_batch(r, replay);  // adaptive or steps: the next steps' batch
  return r;
}

// Forward/backward over the micro-batches: the first writes the flat gradient buffer, the rest
// add to it (no zeroing pass); sums_ gathers this rank's loss, correct predictions and examples.
void TrainLoop::forward_backward(std::int64_t step, bool replay) {
  const std::int64_t b = cfg_.micro_batch;
  sums_.clear_batch();
  for (std::int64_t micro = 0; micro < accum_; ++micro) {
    const data::Batch& batch = prefetch_->next();
    std::int64_t correct = 0;
    sums_.loss() += device_ ? device_forward_backward(step, micro, batch, replay, &correct)
                            : host_forward_backward(step, micro, batch, replay, &correct);
    sums_.correct() += static_cast<double>(correct);
    sums_.examples() += static_cast<double>(b);
  }
}

// One micro-batch on the host model; the noise estimator reads its gradient.
double TrainLoop::host_forward_backward(std::int64_t step, std::int64_t micro,
                                        const data::Batch& batch, bool replay,
                                        std::int64_t* correct) {
  const std::int64_t b = cfg_.micro_batch;
  const float* logits = model_.forward(batch.x.data(), b, true);
  const double loss = batch_loss(model_, logits, ctx_.data.train, batch.labels.data(),
                                 batch.targets.data(), b, grad_scale_, true, correct);
  // Overlap: buckets are final only in the last micro-batch's backward.
  const bool last = micro + 1 == accum_, local = cfg_.local_sgd.local_step(step);
  const bool hook = overlap_ && last && !local;
  static const nn::Model::GradsReady kNoHook;
  model_.backward(batch.x.data(), b, /*accumulate=*/micro > 0, hook ? grads_ready_ : kNoHook);
  if (!replay && !local)
    noise_.after_micro_batch(step, host_gradient_, example_taps(model_, batch.x.data(), taps_));
  return loss;
}

// One micro-batch on the device; the noise estimator reads its gradient there.
double TrainLoop::device_forward_backward(std::int64_t step, std::int64_t micro,
                                          const data::Batch& batch, bool replay,
                                          std::int64_t* correct) {
  const double loss = device_->forward_backward(batch, grad_scale_, micro > 0, correct);
  if (replay) return loss;
  noise::ExampleTaps taps;
  if (noise_.per_example_running() && noise_.active(step))
    taps.segment_sums = device_->per_example_sums(grad_scale_);
  noise_.after_micro_batch(step, device_->gradient_reader(), taps);
  return loss;
}

// One fused allreduce of the flat gradient buffer (its squared norm on the way), then one of
// the small sums: loss, correct, examples, the noise estimator's sums, and two votes that ride
// along so every rank acts on them after the same step: stop (a signal reached a rank) and
// checkpoint now (rank 0's wall-time interval has passed). A local SGD step keeps its own
// gradient (Lin et al. Alg. 1); its grad_norm is the RMS over ranks of the local norms.
TrainLoop::StepResult TrainLoop::reduce(std::int64_t step, bool replay) {
  const bool local = cfg_.local_sgd.local_step(step);
  double& local_sq = sums_.local_grad_sq();
  double& stop_vote = sums_.stop_vote();
  double& checkpoint_vote = sums_.checkpoint_vote();
  if (local) {  // no small/big batch pair for the noise scale
    std::ranges::fill(sums_.noise(), 0.0);
    local_sq = sum_squares(store_.grads());
  } else {
    if (!replay)
      noise_.before_allreduce(step, gradient_reader(), sums_.noise());  // the small batch
    local_sq = 0.0;
  }
  stop_vote = replay ? 0 : interrupt_signal();
  checkpoint_vote = !replay && ctx_.comm.rank() == 0 && ctx_.checkpoint_every_seconds > 0 &&
                    seconds_since(t_checkpoint_) >= ctx_.checkpoint_every_seconds;
  StepResult r{};
  if (!local && overlap_)  // the buckets backward started, and the rest
    r.grad_norm = std::sqrt(overlap_->finish());
  else if (!local && device_)
    r.grad_norm = std::sqrt(device_->allreduce_sq_norm());
  else if (!local)
    r.grad_norm = std::sqrt(ctx_.comm.allreduce_sq_norm(store_.grads(), comm::ReduceOp::kAvg));
  ctx_.comm.allreduce(sums_.all(), comm::ReduceOp::kSum);
  if (local) r.grad_norm = std::sqrt(local_sq / ctx_.comm.size());
  r.loss = sums_.loss() / sums_.examples();
  r.stop = stop_vote > 0;
  r.checkpoint_due = checkpoint_vote > 0;
  return r;
}

// Divergence, judged before the update can spoil the parameters; records a divergence.
StepVerdict TrainLoop::judge(std::int64_t step, StepResult& r) {
  const StepVerdict verdict =
      judge_step(cfg_.divergence, state_.divergence, r.loss, r.grad_norm, r.skip_reason);
  out_.skipped_steps = state_.divergence.skipped_steps;
  out_.last_loss = r.loss;
  if (verdict == StepVerdict::kDiverged) {
    // Past its target (waiting for the other reading, or without stop_at_target) the run
    // reached it: that is its outcome, the divergence after it recorded beside it (until
    // 2026-11-29 it read "diverged", and a sweep dropped the seed that had met the target).
    out_.status = out_.steps_to_target >= 0 ? "reached_target" : "diverged";
    out_.diverged_step = step;
    out_.divergence_reason = r.skip_reason;
  } else if (verdict == StepVerdict::kUpdate) {
    out_.last_finite_loss = r.loss;
  }
  return verdict;
}

// |g_global|^2 is the big batch; a noise.jsonl line every noise.every. A skipped spike's
// gradient is not a sample of the gradient noise.
bool TrainLoop::update_noise(std::int64_t step, const StepResult& r) {
  if (r.verdict == StepVerdict::kSkip) {
    noise_.discard_step();
  } else if (const auto* report =
                 noise_.after_allreduce(step, gradient_reader(), r.grad_norm, sums_.noise())) {
    log_noise(*report, ctx_.noise.window_steps, ctx_.run_dir);
    if (const auto* h = noise_.headline())
      progress_.set_noise_scale(h->b_simple, h->ci_low, h->ci_high);
    return true;
  }
  return false;
}

// The optimizer step over this rank's segments. A skipped spike drops this batch; the step
// still counts, so the schedule and the sampler stay where an uninterrupted run would be.
void TrainLoop::apply_update(std::int64_t step, const StepResult& r, bool replay) {
  if (r.verdict == StepVerdict::kUpdate && device_) {
    device_->update(r.lr, step);
  } else if (r.verdict == StepVerdict::kUpdate) {
    const std::span<const Segment> segments = ctx_.shared_params
                                                  ? std::span<const Segment>(ctx_.update_segments)
                                                  : std::span<const Segment>(store_.segments());
    ctx_.optimizer.step({store_.params(), store_.grads(), segments, r.lr, step});
  } else if (ctx_.comm.rank() == 0 && !replay) {
    std::fprintf(stderr, "warning: step %lld skipped: %s (loss %g)\n",
                 static_cast<long long>(step + 1), r.skip_reason.c_str(), r.loss);
  }
  // Shared parameters: no rank reads them for the next forward before every range is updated.
  if (ctx_.shared_params) ctx_.comm.barrier();
}

// Lin et al. 2020, Alg. 1: after the local step that completes a period of H, every rank takes
// the average of the ranks' parameters (and optimizer state, local_sgd.hpp), as after the run's
// last step. The sync points depend on the step alone, so a replay or a resume meets the same.
void TrainLoop::sync_parameters(std::int64_t step) {
  if (!cfg_.local_sgd.local_step(step) || !in_sync(step + 1)) return;
  average_over_ranks(store_.params(), ctx_.optimizer, store_.grads(), ctx_.comm);
}

// BatchNorm's running statistics follow each rank's own micro-batches: evaluations, split over
// the ranks, mixed several models, and a resume (rank 0's in the checkpoint) changed the metrics
// after it (2026-11-29 audit). Rank 0's become every rank's after each step, as PyTorch's DDP
// broadcasts its buffers; a device's go through the host's mirror of them.
void TrainLoop::share_layer_buffers() {
  if (layer_buffers_.empty()) return;  // one rank, or no layer buffers: nothing to do
  if (device_) device_->pull_layer_buffers(model_);
  const std::vector<std::span<float>> buffers = model_.buffers();
  float* at = layer_buffers_.data();
  for (std::span<float> b : buffers) at = std::copy(b.begin(), b.end(), at);
  ctx_.comm.broadcast(std::as_writable_bytes(std::span<float>(layer_buffers_)), 0);
  const float* from = layer_buffers_.data();
  for (std::span<float> b : buffers) {
    std::copy_n(from, b.size(), b.begin());
    from += b.size();
  }
  if (device_) device_->push_layer_buffers(model_);
}

// The forward passes of a step that is skipped or diverges updated BatchNorm's running
// statistics with its batch: the final checkpoint of a diverged run held step N's parameters
// beside statistics from step N + 1's forward (a mean of 17 where 0.12), and a skipped NaN spike
// left NaN statistics (2026-11-29 audit). A device keeps its copy on the device.
void TrainLoop::keep_layer_buffers() {
  if (device_) return device_->keep_layer_buffers();
  if (buffers_before_step_.empty()) return;
  float* at = buffers_before_step_.data();
  for (std::span<float> b : model_.buffers()) at = std::copy(b.begin(), b.end(), at);
}

void TrainLoop::restore_layer_buffers() {
  if (device_) return device_->restore_layer_buffers();
  if (buffers_before_step_.empty()) return;
  const float* from = buffers_before_step_.data();
  for (std::span<float> b : model_.buffers()) {
    std::copy_n(from, b.size(), b.begin());
    from += b.size();
  }
}

// metrics.jsonl (a skipped step is always logged, marked "skipped"; so is a varying batch's
// change) and the progress line.
void TrainLoop::log_step(const StepResult& r) {
  const double epoch = epoch_now();
  if (r.verdict == StepVerdict::kSkip && ctx_.run_dir) {
    ctx_.run_dir->append_metrics({{"step", out_.steps},
                                  {"epoch", epoch},
                                  {"lr", r.lr},
                                  {"loss", r.loss},
                                  {"grad_norm", r.grad_norm},
                                  {"skipped", true}});
  } else if (out_.steps % cfg_.log_every == 0 || last_step() || r.batch_changed) {
    const double window_s = seconds_since(t_window_);
    const double samples_per_s =
        (state_.examples_seen - window_examples_from_) / std::max(window_s, 1e-9);
    if (ctx_.run_dir) {
      nlohmann::json line = {
          {"step", out_.steps}, {"epoch", epoch}, {"lr", r.lr}, {"loss", r.loss}};
      if (variable_batch_) {
        line["global_batch"] = r.global_batch;
        line["examples"] = state_.examples_seen;
        // Each change has its line, at the step that decided it (before any checkpoint of
        // that step), whatever train.log_every is.
        if (r.batch_changed) line["next_global_batch"] = global_batch_now();
      }
      // training accuracy only where there are classes (regression has none to count)
      if (ctx_.data.train.is_classification())
        line["accuracy"] = sums_.correct() / sums_.examples();
      line["grad_norm"] = r.grad_norm;
      line["samples_per_s"] = samples_per_s;
      line["wall_time"] = wall_time();
      ctx_.run_dir->append_metrics(line);
    }
    progress_.update(out_.steps, r.loss, state_.last_val_accuracy, samples_per_s);
    out_.window_samples_per_s.push_back(samples_per_s);
    t_window_ = Clock::now();
    window_examples_from_ = state_.examples_seen;
  }
}

// The divergence guard's reference (divergence.hpp) is the first step's loss: at a small batch a
// mean over a few examples, which chance can put near 0 (batch 1, regression: 0.0016 where the
// mean was ~17; an ordinary later loss read as a spike and 7 of 10 stable runs "diverged":
// 2026-11-29 audit). The untrained model's mean loss over the first kReferenceExamples training
// examples is a floor under it, measured where the global batch holds fewer. Collective.
void TrainLoop::measure_initial_loss() {
  constexpr std::int64_t kReferenceExamples = 256;
  const data::Dataset& train = ctx_.data.train;
  if (global_batch_now() >= kReferenceExamples || train.n == 0) return;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(std::min(train.n, kReferenceExamples)));
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  const Evaluation e = evaluate(model_, data::subset(train, rows), ctx_.comm, cfg_.eval_batch);
  if (std::isfinite(e.loss)) state_.divergence.initial_loss = e.loss;
}

// The run: steps until the budget, the target (stop_at_target), a prune, a divergence or a
// signal ends it; then the final status and checkpoint.
TrainOutcome TrainLoop::run() {
  wall_before_ = out_.wall_time_s;
  next_eval_ = state_.next_eval > state_.step ? state_.next_eval : next_evaluation(state_.step);
  if (out_.steps_to_target < 0 && !state_.below_target && !follows_noise_) take_lo_snapshot();
  if (state_.step == 0 && state_.divergence.first_loss < 0) measure_initial_loss();
  // A resume from a run's final checkpoint (status no longer "running") trains no more steps.
  for (std::int64_t s = state_.step;
       s < ctx_.total_steps && !examples_budget_spent() && out_.status == "running"; ++s) {
    const StepResult r = step(s, /*replay=*/false);
    if (r.verdict == StepVerdict::kDiverged) break;
    log_step(r);
    if (evaluate_if_due() == Continue::kStop) break;
    // The step is done and logged; the final checkpoint below saves it. Local SGD: the stop
    // waits for the next parameter average, where rank 0's checkpoint holds every rank's state.
    if (r.stop && in_sync(out_.steps)) {
      out_.status = "interrupted";
      out_.interrupt_signal = interrupt_signal() != 0 ? interrupt_signal() : SIGTERM;
      break;
    }
    if (checkpoint_due(r)) {
      out_.wall_time_s = wall_time();
      checkpoint();
      t_checkpoint_ = Clock::now();
    }
  }
  // A divergence can end a local SGD run between averages: the run's model is the average.
  if (!in_sync(out_.steps))
    average_over_ranks(store_.params(), ctx_.optimizer, store_.grads(), ctx_.comm);
  progress_.finish();
  from_device();  // the run's model is the host's from here (summary, final checkpoint)
  out_.wall_time_s = wall_time();
  // This process's own examples over its own time: a branch starts from its reference's
  // examples (examples_seen) with none of its time; a resumed run's earlier part ran elsewhere.
  out_.samples_per_s =
      (state_.examples_seen - examples_at_start_) / std::max(seconds_since(t_start_), 1e-9);
  if (out_.status == "running") out_.status = final_status();
  if (ctx_.checkpoint) checkpoint();  // the final state, whatever the status
  return out_;
}

// Every rank asks (the state may need collectives; rank 0 writes): every checkpoint_every
// steps or when rank 0's wall-time interval has passed; the last step's is the final one.
// Local SGD: only at a parameter average (checkpoint_every is a multiple of H), where rank 0's
// state is every rank's; the wall-time vote stands until then.
bool TrainLoop::checkpoint_due(const StepResult& r) const {
  const bool by_steps = ctx_.checkpoint_every > 0 && out_.steps % ctx_.checkpoint_every == 0;
  return ctx_.checkpoint && (by_steps || r.checkpoint_due) && !last_step() && in_sync(out_.steps);
}

std::string TrainLoop::final_status() const {
  if (out_.steps_to_target >= 0) return "reached_target";
  return cfg_.target.enabled() ? "budget_exhausted" : "completed";
}

}  // namespace detail

TrainOutcome train(TrainContext& ctx) {
  return detail::TrainLoop(ctx).run();
}

}  // namespace lbt::trainer
