// The loop's evaluations: when they fall (train.eval_every, train.eval_growth), what they log
// and keep, steps-to-target under train.target_definition (the weights' EMA or Shallue et al.
// 2019's raw first passage; target_reading.hpp) and the refinement that narrows its crossing
// by replaying from the last evaluation clearly below the target.
#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>

#include "trainer/adaptive_batch.hpp"
#include "trainer/snapshot.hpp"
#include "trainer/train_loop.hpp"

namespace lbt::trainer::detail {

// Evaluates when due; steps-to-result is the first evaluated step meeting the target, its
// crossing then refined. kStop: the target is met with stop_at_target, or the trial is pruned.
TrainLoop::Continue TrainLoop::evaluate_if_due() {
  if (out_.steps != next_eval_ && !last_step()) return Continue::kGoOn;
  const bool met = evaluate_now(false);
  if (met && out_.steps_to_target < 0) {
    out_.steps_to_target = out_.steps;
    out_.examples_to_target = state_.examples_seen;  // the batches actually used
    // An adaptive run's batches depend on the noise EMAs of steps a replay does not feed, so
    // its crossing stays at the evaluation grid: (steps_lo, steps_to_target].
    if (refines()) refine_crossing();
    state_.below_target.reset();  // not needed any more (nor in checkpoints)
  } else if (out_.steps_to_target < 0) {
    out_.steps_lo = out_.steps;
    // The replay starts where the metric was clearly short of the target: a crossing in the
    // band above it, before this evaluation, is then found too. Once an evaluation has come
    // within the band, one clearly short again does not move the start: a metric hovering at
    // the target met it in between at some cadences (an EMA read (320, 336] evaluated every 60
    // steps and (181, 190] every step, until 2026-11-29).
    const bool clearly = clearly_below(cfg_.target, last_metric_, cfg_.target_band);
    if (!follows_noise_ && clearly && !state_.near_target) take_lo_snapshot();
    if (!clearly) state_.near_target = true;
  }
  if (other_seen_ >= 0 && out_.other_hi < 0) out_.other_hi = other_seen_;
  next_eval_ = next_evaluation(out_.steps);
  // Both readings met (summary.json records both), or the other one has had twice the
  // definition's steps: the run may stop.
  const bool waited = out_.steps >= 2 * out_.steps_to_target;
  const bool all_met = out_.steps_to_target >= 0 && (out_.other_hi >= 0 || !ema_on() || waited);
  if (all_met && cfg_.stop_at_target) return Continue::kStop;
  // Met past the prune step: more steps than the best, so it cannot win. It stops at its
  // reading, as a pruned trial stops, the other reading left unread (waiting for it took up to
  // twice the steps: the main job trained 12% more steps).
  if (cfg_.prune_at_step > 0 && out_.steps_to_target > cfg_.prune_at_step) return Continue::kStop;
  // Pruned at the first of the run's own evaluations at or after train.prune_at_step (local SGD:
  // a period's end) whose metric is clearly below the target: the replay that refines a later
  // crossing starts there, so the crossing would lie past it and the trial could not beat the
  // best. (Within the band a replay may find a crossing before the evaluation, so the run goes
  // on.) An evaluation added at the prune step read some trials' crossing there, below the
  // steps their own cadence gives them, and pruning then changed the winner.
  // The replay's start must lie at or past the prune step too: where the metric came near the
  // target before, it stays earlier, and a crossing before the prune step may yet be read.
  const bool past_prune = cfg_.prune_at_step > 0 && out_.steps >= at_sync(cfg_.prune_at_step);
  const bool start_past_prune =
      !state_.below_target || state_.below_target->step >= at_sync(cfg_.prune_at_step);
  if (past_prune && out_.steps_to_target < 0 && start_past_prune &&
      clearly_below(cfg_.target, last_metric_, cfg_.target_band)) {
    out_.status = "pruned";  // cannot beat the best trial at its batch size
    return Continue::kStop;
  }
  return Continue::kGoOn;
}

// The evaluation after `step`: the cadence's (train.eval_every, train.eval_growth). Until the
// target is met, on the reading's grid (the first grid step at or after it), so the coarse
// crossing and the refinement's walk read the same steps whatever the cadence; then, while the
// run waits for the other reading, no later than twice the definition's steps, where it stops.
std::int64_t TrainLoop::next_evaluation(std::int64_t step) const {
  const std::int64_t due = at_sync(next_eval_after(step, cfg_.eval_every, cfg_.eval_growth));
  if (!cfg_.target.enabled()) return due;
  if (out_.steps_to_target < 0) {
    if (!refines()) return due;
    return grid_step_at_or_after(due, cfg_.target_resolution,
                                 [this](std::int64_t s) { return at_sync(s); });
  }
  const std::int64_t stop = at_sync(2 * out_.steps_to_target);
  const bool waiting = out_.other_hi < 0 && cfg_.stop_at_target;
  return waiting && stop > step ? std::min(due, stop) : due;
}

namespace {

// An evaluation's metrics in an eval.jsonl line (or its "ema" object): the loss and, for
// regression, the mse with the sample standard deviation of the examples' own values (each
// reading's resolution: sd / sqrt(val_examples)), R^2 with its linearisation's (the same
// resolution, Evaluation::r2_sd), or the accuracy (its resolution: the
// split's size, summary.json's val_examples). An sd not measured is null.
void add_metrics(nlohmann::json& line, const Evaluation& e) {
  // A spread of values that are not finite is no spread: an infinite loss read sd 0.0.
  const auto sd = [](double value, double sd) {
    return std::isfinite(value) && !std::isnan(sd) ? nlohmann::json(sd) : nlohmann::json();
  };
  line["val_loss"] = e.loss;
  line["val_loss_sd"] = sd(e.loss, e.loss_sd);
  if (e.regression) {
    line["val_mse"] = e.mse;
    line["val_mse_sd"] = sd(e.mse, e.mse_sd);
    line["val_r2"] = e.r2;
    line["val_r2_sd"] = std::isnan(e.r2_sd) ? nlohmann::json() : nlohmann::json(e.r2_sd);
  } else {
    line["val_accuracy"] = e.accuracy;
  }
}

}  // namespace

// Evaluates at the current step, logs it to eval.jsonl (refinement evaluations marked) and
// keeps the best/final metrics; every rank computes the same allreduced metrics.
// With a target, the weights' EMA is evaluated too and logged under "ema"; target_met is
// train.target_definition's.
bool TrainLoop::evaluate_now(bool refinement) {
  const Evaluation e = evaluate_split(false);
  // No validation split (data.validation_size = 0): nothing measured, so nothing is logged and
  // summary.json's metrics stay null (they read 0.0, as if measured, before 2026-11-28).
  if (e.count == 0) return false;
  const Evaluation ema = ema_on() ? evaluate_split(true) : Evaluation{};
  const bool on_ema = cfg_.target_definition == TargetDefinition::kEma;
  const double raw_value = e.metric(cfg_.target.metric), ema_value = ema.metric(cfg_.target.metric);
  last_metric_ = on_ema ? ema_value : raw_value;
  const bool met = cfg_.target.enabled() && e.count > 0 && cfg_.target.met(last_metric_);
  if (ema_on() && cfg_.target.met(on_ema ? raw_value : ema_value) &&
      (other_seen_ < 0 || out_.steps < other_seen_))
    other_seen_ = out_.steps;
  if (ctx_.run_dir) {
    nlohmann::json line = {{"step", out_.steps}, {"epoch", epoch_now()}};
    if (variable_batch_) line["examples"] = state_.examples_seen;
    add_metrics(line, e);
    if (ema_on()) add_metrics(line["ema"], ema);
    line["target_met"] = met;
    line["wall_time"] = wall_time();
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
// mse, each over the run's own evaluations (a metric may peak at a different step than another);
// the best loss, mse and R^2 keep their evaluation's spread, for their intervals.
void TrainLoop::keep_best_and_final(const Evaluation& e) {
  auto highest = [](double best, double v) { return std::isnan(best) ? v : std::max(best, v); };
  auto keep_lowest = [](double& best, double& best_sd, double v, double v_sd) {
    if (std::isnan(best) || v < best) best = v, best_sd = v_sd;
  };
  out_.final_val_loss = e.loss;
  out_.final_val_loss_sd = e.loss_sd;
  out_.final_val_mse_sd = e.mse_sd;
  keep_lowest(out_.best_val_loss, out_.best_val_loss_sd, e.loss, e.loss_sd);
  if (e.regression) {
    out_.final_val_mse = e.mse;
    out_.final_val_r2 = e.r2;
    out_.final_val_r2_sd = e.r2_sd;
    keep_lowest(out_.best_val_mse, out_.best_val_mse_sd, e.mse, e.mse_sd);
    if (std::isnan(out_.best_val_r2) || e.r2 > out_.best_val_r2)
      out_.best_val_r2 = e.r2, out_.best_val_r2_sd = e.r2_sd;
  } else {
    out_.final_val_accuracy = e.accuracy;
    out_.best_val_accuracy = highest(out_.best_val_accuracy, e.accuracy);
  }
}

// Narrows the crossing (steps_lo, steps_to_target] to at most train.target_resolution x
// steps_to_target (0: one step): replays from the snapshot at the last evaluation clearly below
// the target (train.target_band), evaluating at steps spaced resolution x the step
// (walk_to_crossing), and stops at the first evaluation meeting the target. The result is the
// first step of that grid meeting it, so with resolution 0 it is the step that evaluating after
// every step from the snapshot finds, even where the metric crossed, fell back and crossed
// again before the last below-target evaluation. Training is deterministic given the snapshot,
// so the replayed steps are the run's own; the run then continues from its state at the
// coarse crossing, untouched.
void TrainLoop::refine_crossing() {
  const std::int64_t coarse_lo = out_.steps_lo, coarse_hi = out_.steps_to_target;
  from_device();
  const ModelSnapshot at_crossing = take_snapshot(model_, ctx_.optimizer);
  const LoopState crossing_state = state_;
  restore_below_target();
  const Walk w = walk_to_crossing(
      state_.step, coarse_hi, cfg_.target_resolution, [this](std::int64_t s) { return at_sync(s); },
      [this](std::int64_t at) {
        while (state_.step < at) step(state_.step, /*replay=*/true);
        return evaluate_now(true);
      });
  restore(at_crossing, crossing_state);  // out_ is the crossing's outcome again
  // Met nowhere before the coarse crossing: the last coarse evaluation below it bounds it too.
  out_.steps_lo = w.bracket.hi < coarse_hi ? w.bracket.lo : std::max(w.bracket.lo, coarse_lo);
  out_.steps_to_target = w.bracket.hi;
  out_.examples_to_target = examples_at_step(w.bracket.hi);
  out_.refinement_evals = w.evals;
}

void TrainLoop::take_lo_snapshot() {
  from_device();
  state_.below_target = std::make_shared<const BelowTargetState>(
      BelowTargetState{state_.step, state_.divergence, take_snapshot(model_, ctx_.optimizer),
                       state_.ema, state_.ema_updated});
}

void TrainLoop::restore_model(const ModelSnapshot& snapshot) {
  // Shared parameters (one copy per node): rank 0 writes them, no rank reads before it has.
  restore_snapshot(snapshot, model_, ctx_.optimizer, !ctx_.shared_params || ctx_.comm.rank() == 0);
  if (ctx_.shared_params) ctx_.comm.barrier();
}

void TrainLoop::restore(const ModelSnapshot& snapshot, const LoopState& state) {
  restore_model(snapshot);
  state_ = state;
  to_device();
  if (variable_batch_) set_accum(state_.batch_accum);
  start_data_at(state_.step);
}

// Back to the last evaluation below the target; the replay needs only its step, divergence
// state and model (the outcome is restored with the crossing's state afterwards).
void TrainLoop::restore_below_target() {
  const auto below = state_.below_target;
  restore_model(below->model);
  state_.step = below->step;
  state_.examples_seen = examples_at_step(below->step);  // fixed or planned: not adaptive
  if (variable_batch_) set_accum(stepped_accum(cfg_.adaptive, state_.examples_seen));
  state_.divergence = below->divergence;
  state_.ema = below->ema;
  state_.ema_updated = below->ema_updated;
  to_device();
  start_data_at(state_.step);
}

// After `steps` steps: the EMA moves towards the weights by ema_weight (target_reading.hpp).
// Local SGD: only where every rank holds the average, so every rank's EMA is the same.
void TrainLoop::update_ema(std::int64_t steps) {
  if (!ema_on() || !in_sync(steps)) return;
  const auto alpha =
      static_cast<float>(ema_weight(steps, steps - state_.ema_updated, cfg_.ema_horizon));
  state_.ema_updated = steps;
  if (device_) return device_->update_ema(alpha);  // its EMA starts from its weights too
  const std::span<const float> w = store_.params();
  if (state_.ema.size() != w.size()) state_.ema.assign(w.begin(), w.end());  // fresh run
  for (std::size_t i = 0; i < w.size(); ++i) state_.ema[i] += alpha * (w[i] - state_.ema[i]);
}

// The validation split at the weights or at their EMA, where the weights are.
Evaluation TrainLoop::evaluate_split(bool ema) {
  if (device_) return evaluate_on_device(ema);
  return ema ? evaluate_ema() : evaluate(model_, ctx_.data.validation, ctx_.comm, cfg_.eval_batch);
}

// Each rank's device scores its contiguous share of the split, [r n / K, (r + 1) n / K), and the
// sums meet over the host's communicator: every rank reads the same metrics for 1/K of the work.
// One rank scores the whole split in the order it always has.
Evaluation TrainLoop::evaluate_on_device(bool ema) {
  const data::Dataset& split = ctx_.data.validation;
  const ExampleRange share = contiguous_share(split.n, ctx_.comm.rank(), ctx_.comm.size());
  const ClassificationSums mine =
      device_->evaluate(split, share.begin, share.end, cfg_.eval_batch, ema);
  double sums[4] = {mine.loss, mine.correct, mine.count, mine.loss_squares};
  ctx_.comm.allreduce(std::span<double>(sums), comm::ReduceOp::kSum);
  return classification_evaluation({sums[0], sums[1], sums[2], sums[3]});
}

// The EMA's metrics: the weights and the EMA trade places for the evaluation. Layer buffers
// (BatchNorm's running statistics) stay the run's own.
Evaluation TrainLoop::evaluate_ema() {
  if (state_.ema.size() != store_.params().size()) {  // no step yet: the EMA is the weights
    const std::span<const float> w = store_.params();
    state_.ema.assign(w.begin(), w.end());
  }
  swap_ema();
  const Evaluation e = evaluate(model_, ctx_.data.validation, ctx_.comm, cfg_.eval_batch);
  swap_ema();
  return e;
}

// Shared parameters (one copy per node): rank 0 swaps them, no rank reads before it has.
void TrainLoop::swap_ema() {
  if (ctx_.shared_params) ctx_.comm.barrier();
  const std::span<float> w = store_.params();
  if (!ctx_.shared_params || ctx_.comm.rank() == 0)
    std::swap_ranges(w.begin(), w.end(), state_.ema.begin());
  if (ctx_.shared_params) ctx_.comm.barrier();
}

}  // namespace lbt::trainer::detail
