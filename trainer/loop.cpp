// The training loop; reads like llm.c's main loop: data -> forward/backward (x accum) ->
// allreduce -> divergence check -> lr -> optimizer step -> log / evaluate.
#include "trainer/loop.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <csignal>

#include "trainer/data/prefetch.hpp"
#include "trainer/interrupt.hpp"
#include "trainer/nn/loss.hpp"
#include "trainer/noise_log.hpp"
#include "trainer/progress.hpp"

namespace lbt::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Sum of per-example losses of one batch, and (optionally) d(loss)/d(output) * grad_scale
// into the model's output-gradient buffer. correct: argmax hits (classification).
double batch_loss(nn::Model& model, const float* out, const data::Dataset& data,
                  const std::int32_t* labels, const float* targets, std::int64_t batch,
                  float grad_scale, bool want_grad, std::int64_t* correct) {
  float* dout = want_grad ? model.output_grad() : nullptr;
  if (data.is_classification()) {
    return nn::softmax_cross_entropy(out, labels, batch, model.output_dim(), dout, grad_scale,
                                     correct);
  }
  if (correct) *correct = 0;
  return nn::half_squared_error(out, targets, batch, model.output_dim(), dout, grad_scale);
}

}  // namespace

Evaluation evaluate(nn::Model& model, const data::Dataset& data, comm::Communicator& comm,
                    std::int64_t eval_batch) {
  const int K = comm.size(), r = comm.rank();
  const std::int64_t mine = data.n > r ? (data.n - r + K - 1) / K : 0;
  AlignedBuffer x(
      static_cast<std::size_t>(std::min(eval_batch, std::max<std::int64_t>(mine, 1)) * data.dim));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(eval_batch));
  AlignedBuffer targets(
      static_cast<std::size_t>(eval_batch * std::max<std::int64_t>(data.target_dim, 1)));
  double sums[3] = {0.0, 0.0, 0.0};  // loss, correct, count
  for (std::int64_t start = 0; start < mine; start += eval_batch) {
    const std::int64_t b = std::min(eval_batch, mine - start);
    for (std::int64_t j = 0; j < b; ++j) {
      data.copy_example(r + (start + j) * K, j, x.data(), labels.data(), targets.data());
    }
    const float* out = model.forward(x.data(), b, false);
    std::int64_t correct = 0;
    sums[0] +=
        batch_loss(model, out, data, labels.data(), targets.data(), b, 0.0f, false, &correct);
    sums[1] += static_cast<double>(correct);
    sums[2] += static_cast<double>(b);
  }
  comm.allreduce(std::span<double>(sums, 3), comm::ReduceOp::kSum);
  Evaluation e;
  e.count = static_cast<std::int64_t>(sums[2]);
  if (e.count > 0) {
    e.loss = sums[0] / sums[2];
    e.accuracy = data.is_classification() ? sums[1] / sums[2] : 0.0;
  }
  return e;
}

TrainOutcome train(TrainContext& ctx) {
  const TrainConfig& cfg = ctx.config;
  nn::Model& model = ctx.model;
  ParameterStore& store = model.store();
  const data::Dataset& train_data = ctx.data.train;
  const std::int64_t b = cfg.micro_batch, accum = cfg.accum_steps;
  const std::int64_t steps_per_epoch = ctx.sampler.steps_per_epoch();
  const float grad_scale = 1.0f / static_cast<float>(b * accum);  // mean over this rank's examples

  model.reserve(b);
  LoopState state = ctx.resume_from;
  TrainOutcome& out = state.outcome;
  out.total_steps = ctx.total_steps;
  const data::AugmentOptions augment{cfg.data.augment_crop_padding, cfg.data.augment_flip, cfg.seed,
                                     static_cast<std::uint64_t>(ctx.comm.rank())};
  data::Prefetcher prefetch(train_data, ctx.sampler, b, accum, /*first_step=*/state.step,
                            /*depth=*/3, augment);
  Progress progress(ctx.progress && ctx.comm.rank() == 0, ctx.total_steps);
  noise::OnlineEstimator noise(ctx.noise, ctx.comm.size(), b, accum, store.segments(),
                               per_example_support(model));
  // noise.jsonl's method line is written once, by the fresh run (a resumed one keeps it)
  log_noise_note(noise, state.step == 0 ? ctx.run_dir : nullptr, ctx.comm.rank() == 0);
  if (state.step > 0) noise.load_state(state.noise_state);  // resumed: continue the EMAs
  TapBuffers taps;
  // loss, correct, examples on this rank; then the noise estimator's sums; then two votes
  // that ride on the same allreduce, so every rank acts on them after the same step: stop (a
  // signal reached a rank) and checkpoint now (rank 0's wall-time interval has passed)
  std::vector<double> sums(3 + noise.num_slots() + 2);
  const std::span<double> noise_sums = std::span<double>(sums).subspan(3, noise.num_slots());
  double& stop_vote = sums[sums.size() - 2];
  double& checkpoint_vote = sums[sums.size() - 1];

  const auto t_start = Clock::now();
  const double wall_before = out.wall_time_s;  // time spent before a resume
  auto t_window = t_start;
  auto t_checkpoint = t_start;
  std::int64_t window_steps = 0;
  double& last_val_accuracy = state.last_val_accuracy;
  auto checkpoint = [&] {
    state.noise_state = noise.save_state();
    ctx.checkpoint(state);
  };

  for (std::int64_t step = state.step; step < ctx.total_steps; ++step) {
    if (ctx.probe) ctx.probe(step);
    // ---- forward / backward over accum micro-batches: the first writes grads_flat, the
    //      rest add to it (no zeroing pass) ----
    std::fill(sums.begin(), sums.begin() + 3, 0.0);
    for (std::int64_t micro = 0; micro < accum; ++micro) {
      const data::Batch& batch = prefetch.next();
      const float* logits = model.forward(batch.x.data(), b, true);
      std::int64_t correct = 0;
      sums[0] += batch_loss(model, logits, train_data, batch.labels.data(), batch.targets.data(), b,
                            grad_scale, true, &correct);
      sums[1] += static_cast<double>(correct);
      sums[2] += static_cast<double>(b);
      model.backward(batch.x.data(), b, /*accumulate=*/micro > 0);
      noise.after_micro_batch(step, store.grads(), example_taps(model, batch.x.data(), taps));
    }
    // ---- one fused allreduce of the flat gradient buffer: the global-batch mean gradient ----
    noise.before_allreduce(step, store.grads(), noise_sums);  // |g_local|^2: the small batch
    stop_vote = interrupt_signal();
    checkpoint_vote = ctx.comm.rank() == 0 && ctx.checkpoint_every_seconds > 0 &&
                      seconds_since(t_checkpoint) >= ctx.checkpoint_every_seconds;
    const double grad_norm =
        std::sqrt(ctx.comm.allreduce_sq_norm(store.grads(), comm::ReduceOp::kAvg));
    ctx.comm.allreduce(std::span<double>(sums), comm::ReduceOp::kSum);
    const double loss = sums[0] / sums[2];
    const bool stop = stop_vote > 0, checkpoint_due = checkpoint_vote > 0;
    // ---- divergence: judged on the allreduced numbers (every rank agrees), before the
    //      update can spoil the parameters ----
    std::string reason;
    const StepVerdict verdict =
        judge_step(cfg.divergence, state.divergence, loss, grad_norm, reason);
    out.skipped_steps = state.divergence.skipped_steps;
    out.last_loss = loss;
    if (verdict == StepVerdict::kDiverged) {
      out.status = "diverged";
      out.diverged_step = step;
      out.divergence_reason = reason;
      break;
    }
    if (verdict == StepVerdict::kUpdate) out.last_finite_loss = loss;

    // ---- noise scale: |g_global|^2 is the big batch; a noise.jsonl line every noise.every
    //      (a skipped spike's gradient is not a sample of the gradient noise) ----
    if (verdict == StepVerdict::kSkip) {
      noise.discard_step();
    } else if (const auto* report =
                   noise.after_allreduce(step, store.grads(), grad_norm, noise_sums)) {
      log_noise(*report, ctx.noise.window_steps, ctx.run_dir);
      if (const auto* h = noise.headline())
        progress.set_noise_scale(h->b_simple, h->ci_low, h->ci_high);
    }

    // ---- update (a skipped spike drops this batch; the step still counts, so the schedule
    //      and the sampler stay where an uninterrupted run would be) ----
    const double lr = ctx.schedule(step);
    if (verdict == StepVerdict::kUpdate) {
      const std::span<const Segment> segments = ctx.shared_params
                                                    ? std::span<const Segment>(ctx.update_segments)
                                                    : std::span<const Segment>(store.segments());
      ctx.optimizer.step({store.params(), store.grads(), segments, lr, step});
    } else if (ctx.comm.rank() == 0) {
      std::fprintf(stderr, "warning: step %lld skipped: %s (loss %g)\n",
                   static_cast<long long>(step + 1), reason.c_str(), loss);
    }
    // Shared parameters: no rank reads them for the next forward before every range is updated.
    if (ctx.shared_params) ctx.comm.barrier();
    out.steps = state.step = step + 1;
    ++window_steps;

    // ---- log (a skipped step is always logged, marked "skipped") ----
    if (verdict == StepVerdict::kSkip && ctx.run_dir) {
      ctx.run_dir->append_metrics({{"step", out.steps},
                                   {"epoch", static_cast<double>(out.steps) / steps_per_epoch},
                                   {"lr", lr},
                                   {"loss", loss},
                                   {"grad_norm", grad_norm},
                                   {"skipped", true}});
    } else if (out.steps % cfg.log_every == 0 || out.steps == ctx.total_steps) {
      const double window_s = seconds_since(t_window);
      const double samples_per_s = window_steps * cfg.global_batch / std::max(window_s, 1e-9);
      if (ctx.run_dir) {
        ctx.run_dir->append_metrics({{"step", out.steps},
                                     {"epoch", static_cast<double>(out.steps) / steps_per_epoch},
                                     {"lr", lr},
                                     {"loss", loss},
                                     {"accuracy", sums[1] / sums[2]},
                                     {"grad_norm", grad_norm},
                                     {"samples_per_s", samples_per_s},
                                     {"wall_time", seconds_since(t_start)}});
      }
      progress.update(out.steps, loss, last_val_accuracy, samples_per_s);
      t_window = Clock::now();
      window_steps = 0;
    }

    // ---- evaluate; steps-to-result is the first evaluation step that meets the target ----
    if (out.steps % cfg.eval_every == 0 || out.steps == ctx.total_steps) {
      const Evaluation e = evaluate(model, ctx.data.validation, ctx.comm, cfg.eval_batch);
      out.final_val_accuracy = last_val_accuracy = e.accuracy;
      out.final_val_loss = e.loss;
      out.best_val_accuracy = std::isnan(out.best_val_accuracy)
                                  ? e.accuracy
                                  : std::max(out.best_val_accuracy, e.accuracy);
      out.best_val_loss =
          std::isnan(out.best_val_loss) ? e.loss : std::min(out.best_val_loss, e.loss);
      const bool met = cfg.target.enabled() && e.count > 0 && cfg.target.met(e.accuracy, e.loss);
      if (met && out.steps_to_target < 0) {
        out.steps_to_target = out.steps;
        out.examples_to_target = out.steps * cfg.global_batch;
      }
      if (ctx.run_dir) {
        ctx.run_dir->append_eval({{"step", out.steps},
                                  {"epoch", static_cast<double>(out.steps) / steps_per_epoch},
                                  {"val_loss", e.loss},
                                  {"val_accuracy", e.accuracy},
                                  {"target_met", met},
                                  {"wall_time", seconds_since(t_start)}});
      }
      progress.update(out.steps, loss, last_val_accuracy, -1.0);
      // Every rank computed the same allreduced metrics, so all stop together.
      if (met && cfg.stop_at_target) break;
    }
    if (stop) {  // the step is done and logged; the final checkpoint below saves it
      out.status = "interrupted";
      out.interrupt_signal = interrupt_signal() != 0 ? interrupt_signal() : SIGTERM;
      break;
    }

    // ---- checkpoint (every rank calls: state may need collectives; rank 0 writes) ----
    const bool by_steps = ctx.checkpoint_every > 0 && out.steps % ctx.checkpoint_every == 0;
    if (ctx.checkpoint && (by_steps || checkpoint_due) && out.steps < ctx.total_steps) {
      out.wall_time_s = wall_before + seconds_since(t_start);
      checkpoint();
      t_checkpoint = Clock::now();
    }
  }
  progress.finish();
  out.wall_time_s = wall_before + seconds_since(t_start);
  out.samples_per_s = out.steps * cfg.global_batch / std::max(out.wall_time_s, 1e-9);
  if (out.status == "running") {
    if (out.steps_to_target >= 0)
      out.status = "reached_target";
    else if (cfg.target.enabled())
      out.status = "budget_exhausted";
    else
      out.status = "completed";
  }
  if (ctx.checkpoint) checkpoint();  // the final state, whatever the status
  return out;
}

}  // namespace lbt::trainer
