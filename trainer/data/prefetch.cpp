// Prefetch ring; see prefetch.hpp.
#include "trainer/data/prefetch.hpp"

#include "core/error.hpp"

namespace lbt::data {

Prefetcher::Prefetcher(const Dataset& data, ShardedSampler sampler, std::int64_t micro_batch,
                       std::int64_t accum_steps, std::int64_t first_step, int depth,
                       AugmentOptions augment, Features features)
    : data_(data),
      sampler_(std::move(sampler)),
      micro_(micro_batch),
      accum_(accum_steps),
      ring_(static_cast<std::size_t>(depth)),
      indices_(static_cast<std::size_t>(micro_batch)),
      augment_(augment),
      features_(features),
      first_step_(first_step) {
  start();
}

Prefetcher::Prefetcher(const Dataset& data, ShardedSampler sampler, std::int64_t micro_batch,
                       Stream stream, int depth, AugmentOptions augment, Features features)
    : data_(data),
      sampler_(std::move(sampler)),
      micro_(micro_batch),
      accum_(1),
      ring_(static_cast<std::size_t>(depth)),
      indices_(static_cast<std::size_t>(micro_batch)),
      augment_(augment),
      features_(features),
      first_step_(stream.first_micro),
      stream_(true) {
  start();
}

void Prefetcher::start() {
  if (features_ == Features::kRowsOnly && augment_.enabled())
    throw Error("a prefetcher that copies no features cannot augment them");
  for (Batch& b : ring_) {
    b.has_features = features_ == Features::kCopied;
    b.rows.resize(static_cast<std::size_t>(micro_));
    if (b.has_features) b.x.resize(static_cast<std::size_t>(micro_ * data_.dim));
    b.labels.resize(static_cast<std::size_t>(micro_));
    b.targets.resize(
        static_cast<std::size_t>(micro_ * std::max<std::int64_t>(data_.target_dim, 1)));
  }
  const std::int64_t bytes = features_ == Features::kCopied ? micro_ * data_.dim * 4 : micro_ * 4;
  inline_ = bytes <= kInlineBytes;
  if (!inline_) thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::fill(Batch& batch, std::int64_t step, std::int64_t micro) {
  sampler_.micro_batch_indices(step, micro, indices_.data());
  batch.step = step;
  batch.micro = micro;
  // Augment this micro-batch here, off the compute threads; one stream per (step, micro).
  gather(batch, step * accum_ + micro);
}

// Slot i of this prefetcher: micro-batch i % accum of step first + i / accum, or in a stream
// micro-batch first + i (its augmentation stream the same micro-batch count as a fixed run's).
void Prefetcher::fill_slot(Batch& batch, std::int64_t slot_index) {
  if (!stream_) {
    fill(batch, first_step_ + slot_index / accum_, slot_index % accum_);
    return;
  }
  const std::int64_t m = first_step_ + slot_index;
  sampler_.stream_indices(m, indices_.data());
  batch.step = -1;  // a stream knows no steps
  batch.micro = m;
  gather(batch, m);
}

void Prefetcher::gather(Batch& batch, std::int64_t augment_stream) {
  batch.size = micro_;
  for (std::int64_t r = 0; r < micro_; ++r) batch.rows[r] = static_cast<std::int32_t>(indices_[r]);
  if (features_ == Features::kRowsOnly) {
    if (data_.is_classification())
      for (std::int64_t r = 0; r < micro_; ++r) batch.labels[r] = data_.labels[indices_[r]];
    return;
  }
  for (std::int64_t r = 0; r < micro_; ++r) {
    data_.copy_example(indices_[r], r, batch.x.data(), batch.labels.data(), batch.targets.data());
  }
  augment_batch(batch.x.data(), micro_, data_.shape, augment_, augment_stream, scratch_);
}

void Prefetcher::run() {
  const auto depth = static_cast<std::int64_t>(ring_.size());
  while (true) {
    std::int64_t slot_index;
    {
      std::unique_lock lock(mutex_);
      // Keep one slot for the consumer's current batch: fill at most depth - 1 ahead.
      cv_.wait(lock, [&] { return stop_ || produced_ - consumed_ < depth - 1; });
      if (stop_) return;
      slot_index = produced_;
    }
    fill_slot(ring_[static_cast<std::size_t>(slot_index % depth)], slot_index);
    {
      std::lock_guard lock(mutex_);
      ++produced_;
    }
    cv_.notify_all();
  }
}

const Batch& Prefetcher::next() {
  if (inline_) {
    Batch& batch =
        ring_[static_cast<std::size_t>(consumed_ % static_cast<std::int64_t>(ring_.size()))];
    fill_slot(batch, consumed_++);
    return batch;
  }
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return produced_ > consumed_; });
  const Batch& batch =
      ring_[static_cast<std::size_t>(consumed_ % static_cast<std::int64_t>(ring_.size()))];
  ++consumed_;
  lock.unlock();
  cv_.notify_all();
  return batch;
}

}  // namespace lbt::data
