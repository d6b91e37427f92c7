// The loop's batch and data position: a fixed batch counts them in steps; a varying one
// (train.adaptive: planned stages, or the noise scale's, McCandlish et al. 2018, App. D) in
// examples, with its LR rescaled to the step's batch. The loop itself is loop.cpp.
#include <memory>

#include "trainer/adaptive_batch.hpp"
#include "trainer/train_loop.hpp"

namespace lbt::trainer::detail {

// A varying batch counts the data position in micro-batches (examples seen / (ranks x
// micro_batch)), as the accumulation count changes; a fixed one in steps.
void TrainLoop::start_data_at(std::int64_t step) {
  prefetch_.reset();  // one prefetch thread at a time
  // A device holding the training split draws the examples itself: the host sends their rows.
  const auto features =
      device_ && device_->keeps_train_split() ? data::Features::kRowsOnly : data::Features::kCopied;
  if (variable_batch_) {
    const data::Prefetcher::Stream from{state_.examples_seen / cfg_.adaptive.step_examples};
    prefetch_ = std::make_unique<data::Prefetcher>(ctx_.data.train, ctx_.sampler, cfg_.micro_batch,
                                                   from, /*depth=*/3, augment_, features);
    return;
  }
  prefetch_ =
      std::make_unique<data::Prefetcher>(ctx_.data.train, ctx_.sampler, cfg_.micro_batch,
                                         cfg_.accum_steps, step, /*depth=*/3, augment_, features);
}

// Fixed batch: the schedule at the step. Varying batch: the schedule counted in examples (its
// steps are the first batch's, so warmup and decay stay at the same data position) and the
// LR rescaled by schedule.scaling from the first batch to this step's batch.
double TrainLoop::lr_at(std::int64_t step) const {
  if (!variable_batch_) return ctx_.schedule(step);
  const std::int64_t position = state_.examples_seen / cfg_.global_batch;
  return ctx_.schedule(position) *
         schedules::scaling_factor(ctx_.lr_scaling, global_batch_now(), cfg_.global_batch);
}

// The next step's batch: the planned stage at the examples seen (a replay meets the same
// stages), or the noise scale's (adapt_batch; a replay feeds no noise estimate and keeps it).
bool TrainLoop::next_batch(const StepResult& r, bool replay) {
  if (!variable_batch_) return false;
  if (follows_noise_) return !replay && adapt_batch(r);
  const std::int64_t accum = stepped_accum(cfg_.adaptive, state_.examples_seen);
  if (accum == accum_) return false;
  set_accum(accum);
  return true;
}

// McCandlish et al. 2018, App. D: at each noise report, the batch moves towards the EMA
// B_simple (clipped, realisable, with hysteresis: adaptive_batch.hpp); batch_min until resolved.
bool TrainLoop::adapt_batch(const StepResult& r) {
  if (!r.noise_reported) return false;
  const noise::NoiseScale* averaged = noise_.averaged();
  if (!averaged) return false;
  const std::int64_t accum =
      adaptive_accum(cfg_.adaptive, averaged->b_simple, averaged->resolved, accum_);
  if (accum == accum_) return false;
  set_accum(accum);
  return true;
}

void TrainLoop::set_accum(std::int64_t accum) {
  accum_ = state_.batch_accum = accum;
  grad_scale_ = 1.0f / static_cast<float>(cfg_.micro_batch * accum_);
  noise_.set_accum(accum_);
}

// Examples over an epoch's: for a fixed batch the same double as steps / steps_per_epoch, and
// right for a cbs branch too, whose steps before its checkpoint were its reference's, at another
// batch.
double TrainLoop::epoch_now() const {
  if (!variable_batch_)
    return static_cast<double>(state_.examples_seen) /
           static_cast<double>(ctx_.sampler.steps_per_epoch() * cfg_.global_batch);
  const auto per_epoch = ctx_.sampler.per_rank() * ctx_.comm.size();
  return static_cast<double>(state_.examples_seen) / static_cast<double>(per_epoch);
}

}  // namespace lbt::trainer::detail
