// The loop's evaluations: when they fall (train.eval_every, train.eval_growth), what they log
// and keep, steps-to-target (Shallue et al. 2019's first evaluated step meeting the target)
// and the refinement that narrows its crossing by replaying from the last evaluation below it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "trainer/snapshot.hpp"
#include "trainer/train_loop.hpp"

namespace lbt::trainer::detail {

// The evaluation steps: every `every` steps, or with growth g > 1 geometrically, the next one
// after step s at s + max(every, ceil((g - 1) s)): O(log S) evaluations for S steps, each
// coarse bracket at most (g - 1) / g of its upper end (the refinement narrows the crossing's).
std::int64_t next_eval_after(std::int64_t step, std::int64_t every, double growth) {
  if (growth <= 1.0) return (step / every + 1) * every;
  std::int64_t s = 0;
  while (s <= step) {
    const double grown = std::ceil((growth - 1.0) * static_cast<double>(s) - 1e-9);
    s += std::max<std::int64_t>(every, static_cast<std::int64_t>(grown));
  }
  return s;
}

// Evaluates when due; steps-to-result is the first evaluated step meeting the target, its
// crossing then refined. kStop: the target is met with stop_at_target, or the trial is pruned.
TrainLoop::Continue TrainLoop::evaluate_if_due() {
  // Local SGD evaluates the ranks' average: an evaluation due inside a period moves to its end.
  const bool prune_step = cfg_.prune_at_step > 0 && out_.steps == at_sync(cfg_.prune_at_step);
  if (out_.steps != next_eval_ && !last_step() && !prune_step) return Continue::kGoOn;
  next_eval_ = at_sync(next_eval_after(out_.steps, cfg_.eval_every, cfg_.eval_growth));
  const bool met = evaluate_now(false);
  if (met && out_.steps_to_target < 0) {
    out_.steps_to_target = out_.steps;
    out_.examples_to_target = state_.examples_seen;  // the batches actually used
    // An adaptive run's batches depend on the noise EMAs of steps a replay does not feed, so
    // its crossing stays at the evaluation grid: (steps_lo, steps_to_target].
    if (!adaptive_) refine_crossing();
    state_.below_target.reset();  // not needed any more (nor in checkpoints)
  } else if (out_.steps_to_target < 0) {
    out_.steps_lo = out_.steps;
    if (!adaptive_) take_lo_snapshot();
  }
  if (met && cfg_.stop_at_target) return Continue::kStop;
  if (prune_step && out_.steps_to_target < 0) {
    out_.status = "pruned";  // cannot beat the best trial at its batch size
    return Continue::kStop;
  }
  return Continue::kGoOn;
}

// Evaluates at the current step, logs it to eval.jsonl (refinement evaluations marked) and
// keeps the best/final metrics; every rank computes the same allreduced metrics.
bool TrainLoop::evaluate_now(bool refinement) {
  const Evaluation e = evaluate(model_, ctx_.data.validation, ctx_.comm, cfg_.eval_batch);
  const bool met =
      cfg_.target.enabled() && e.count > 0 && cfg_.target.met(e.metric(cfg_.target.metric));
  if (ctx_.run_dir) {
    nlohmann::json line = {{"step", out_.steps}, {"epoch", epoch_now()}, {"val_loss", e.loss}};
    if (adaptive_) line["examples"] = state_.examples_seen;
    if (e.regression) {
      line["val_mse"] = e.mse;
      line["val_r2"] = e.r2;
    } else {
      line["val_accuracy"] = e.accuracy;
    }
    line["target_met"] = met;
    line["wall_time"] = seconds_since(t_start_);
    if (refinement) line["refinement"] = true;
    ctx_.run_dir->append_eval(line);
  }
  if (refinement) return met;  // the run's own metrics are those of its own steps
  keep_best_and_final(e);
  state_.last_val_accuracy = e.regression ? e.mse : e.accuracy;
  progress_.update(out_.steps, out_.last_loss, state_.last_val_accuracy, -1.0);
  return met;
}

// summary.json's best/final metrics: best is the highest accuracy and R^2, the lowest loss and
// mse, each over the run's own evaluations (a metric may peak at a different step than another).
void TrainLoop::keep_best_and_final(const Evaluation& e) {
  auto lowest = [](double best, double v) { return std::isnan(best) ? v : std::min(best, v); };
  auto highest = [](double best, double v) { return std::isnan(best) ? v : std::max(best, v); };
  out_.final_val_loss = e.loss;
  out_.best_val_loss = lowest(out_.best_val_loss, e.loss);
  if (e.regression) {
    out_.final_val_mse = e.mse;
    out_.final_val_r2 = e.r2;
    out_.best_val_mse = lowest(out_.best_val_mse, e.mse);
    out_.best_val_r2 = highest(out_.best_val_r2, e.r2);
  } else {
    out_.final_val_accuracy = e.accuracy;
    out_.best_val_accuracy = highest(out_.best_val_accuracy, e.accuracy);
  }
}

// Narrows the crossing (steps_lo, steps_to_target] to at most train.target_resolution x
// steps_to_target (0: one step): replays from the snapshot at the lower end, evaluating every
// delta = max(1, floor(resolution x (steps_lo + 1))) steps, and stops at the first evaluation
// meeting the target. Walking forward (not bisecting) keeps Shallue's definition when the
// metric hovers around the target: the result is the first step of that grid meeting it, so
// with resolution 0 it is the step that evaluating after every step from steps_lo finds.
// Training is deterministic given the snapshot, so the replayed steps are the run's own; the
// run then continues from its state at the coarse crossing, untouched.
void TrainLoop::refine_crossing() {
  std::int64_t lo = out_.steps_lo, hi = out_.steps_to_target;
  const auto delta = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(cfg_.target_resolution * static_cast<double>(lo + 1)));
  if (hi - lo <= delta) return;
  const ModelSnapshot at_crossing = take_snapshot(model_, ctx_.optimizer);
  const LoopState crossing_state = state_;
  int evals = 0;
  // Resumed from a checkpoint without it (another process layout): walk from the resumed step.
  restore_below_target();
  // Local SGD: the grid's points move to the next parameter average, where evaluations are.
  for (std::int64_t at = at_sync(state_.step == lo ? lo + delta : state_.step); at < hi;
       at = at_sync(std::min(hi, at + delta))) {
    while (state_.step < at) step(state_.step, /*replay=*/true);
    ++evals;
    if (evaluate_now(true)) {
      hi = at;
      break;
    }
    lo = at;
  }
  restore(at_crossing, crossing_state);
  out_.steps_lo = lo;
  out_.steps_to_target = hi;
  out_.examples_to_target = hi * cfg_.global_batch;
  out_.refinement_evals = evals;
}

void TrainLoop::take_lo_snapshot() {
  state_.below_target = std::make_shared<const BelowTargetState>(
      BelowTargetState{state_.step, state_.divergence, take_snapshot(model_, ctx_.optimizer)});
}

void TrainLoop::restore_model(const ModelSnapshot& snapshot) {
  // Shared parameters (one copy per node): rank 0 writes them, no rank reads before it has.
  restore_snapshot(snapshot, model_, ctx_.optimizer, !ctx_.shared_params || ctx_.comm.rank() == 0);
  if (ctx_.shared_params) ctx_.comm.barrier();
}

void TrainLoop::restore(const ModelSnapshot& snapshot, const LoopState& state) {
  restore_model(snapshot);
  state_ = state;
  start_data_at(state_.step);
}

// Back to the last evaluation below the target; the replay needs only its step, divergence
// state and model (the outcome is restored with the crossing's state afterwards).
void TrainLoop::restore_below_target() {
  const auto below = state_.below_target;
  restore_model(below->model);
  state_.step = below->step;
  state_.examples_seen = below->step * cfg_.global_batch;  // fixed batch only (no refinement)
  state_.divergence = below->divergence;
  start_data_at(state_.step);
}

}  // namespace lbt::trainer::detail
