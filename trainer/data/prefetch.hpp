// Background prefetch: a thread gathers the next micro-batches (rows picked by the sampler)
// into a small ring of preallocated buffers while the current one computes. A micro-batch of
// at most kInlineBytes of features is gathered by next() itself, on the calling thread: the
// copy takes less than waking the thread does (a linear 16-1 model at batch 8 stepped in 23 us
// with the thread, its wake-ups in the kernel the largest part, perf), and results are the
// same either way (the same rows in the same order). A GPU run's batches carry rows only (4
// bytes an example), so up to 8192 examples they are gathered inline too.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/tensor.hpp"
#include "trainer/data/augment.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/sampler.hpp"

namespace lbt::data {

struct Batch {
  std::int64_t step = 0, micro = 0, size = 0;
  AlignedBuffer x;                   // [size, dim]
  std::vector<std::int32_t> labels;  // [size] (classification)
  AlignedBuffer targets;             // [size, target_dim] (regression)
  std::vector<std::int32_t> rows;    // [size]: the dataset's rows drawn, in order
  bool has_features = true;          // false: x is not filled (Features::kRowsOnly)
};

// What a batch carries: the examples' features (and labels or targets), or only which rows they
// are and their labels, for a consumer that keeps the dataset elsewhere (a GPU) and draws the
// features there. Rows only is for data without augmentation.
enum class Features { kCopied, kRowsOnly };

class Prefetcher {
 public:
  // Produces micro-batches for steps first_step, first_step + 1, ... in order.
  Prefetcher(const Dataset& data, ShardedSampler sampler, std::int64_t micro_batch,
             std::int64_t accum_steps, std::int64_t first_step, int depth = 3,
             AugmentOptions augment = {}, Features features = Features::kCopied);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Adaptive batch: micro-batches m = first_micro, first_micro + 1, ... of this rank's stream
  // (ShardedSampler::stream_indices), for steps of any accumulation count.
  struct Stream {
    std::int64_t first_micro = 0;
  };
  Prefetcher(const Dataset& data, ShardedSampler sampler, std::int64_t micro_batch, Stream stream,
             int depth = 3, AugmentOptions augment = {}, Features features = Features::kCopied);

  // Blocks until the next micro-batch is ready; valid until the following call.
  const Batch& next();
  const ShardedSampler& sampler() const { return sampler_; }

  static constexpr std::int64_t kInlineBytes = 32 << 10;

 private:
  void start();
  void run();
  void fill(Batch& batch, std::int64_t step, std::int64_t micro);
  void fill_slot(Batch& batch, std::int64_t slot_index);
  void gather(Batch& batch, std::int64_t augment_stream);

  const Dataset& data_;
  ShardedSampler sampler_;
  std::int64_t micro_, accum_;
  std::vector<Batch> ring_;
  std::vector<std::int64_t> indices_;
  AugmentOptions augment_;
  Features features_;
  std::vector<float> scratch_;
  std::int64_t produced_ = 0, consumed_ = 0, first_step_ = 0;
  bool stream_ = false;  // micro-batches counted from first_step_ as a micro-batch index
  bool stop_ = false;
  bool inline_ = false;  // gathered by next(), no thread (kInlineBytes)
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace lbt::data
