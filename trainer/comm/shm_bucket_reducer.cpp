// ShmBucketReducer; see shm_bucket_reducer.hpp.
#include "trainer/comm/shm_bucket_reducer.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "core/sum_squares.hpp"
#include "trainer/comm/shm_reducer.hpp"

namespace lbt::comm {
namespace {

constexpr std::size_t kPosted = 0, kDone = 1;  // a rank's counters
constexpr int kSpins = 2000;                   // polls before sleeping (about 10-50 us)

std::uint32_t load(std::uint32_t* counter) {
  return std::atomic_ref<std::uint32_t>(*counter).load(std::memory_order_acquire);
}

// Raises a counter others may sleep on. No FUTEX_PRIVATE_FLAG: the waiters are other processes.
void publish(std::uint32_t* counter, std::uint32_t value) {
  std::atomic_ref<std::uint32_t>(*counter).store(value, std::memory_order_release);
  syscall(SYS_futex, counter, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits until *counter >= target (modulo 2^32); false when `stop` was raised first. The sleep
// is bounded so that a stop is seen even when no rank publishes again.
bool wait_for(std::uint32_t* counter, std::uint32_t target, const std::atomic<bool>* stop) {
  for (int polls = 0;; ++polls) {
    const std::uint32_t now = load(counter);
    if (static_cast<std::int32_t>(now - target) >= 0) return true;
    if (stop && stop->load(std::memory_order_relaxed)) return false;
    if (polls < kSpins) {
      __builtin_ia32_pause();
      continue;
    }
    timespec timeout{0, 10'000'000};  // 10 ms
    syscall(SYS_futex, counter, FUTEX_WAIT, now, &timeout, nullptr, 0);
  }
}

}  // namespace

void ShmBucketReducer::reset_counters(std::uint32_t* counters) {
  publish(counters + kPosted, 0);
  publish(counters + kDone, 0);
}

ShmBucketReducer::ShmBucketReducer(Shared shared, std::size_t bucket_floats)
    : shared_(std::move(shared)),
      bucket_(bucket_floats),
      num_buckets_((shared_.n + bucket_floats - 1) / bucket_floats) {
  worker_ = std::thread([this] { reduce_loop(); });
}

ShmBucketReducer::~ShmBucketReducer() {
  stop_.store(true);
  worker_.join();
}

// Bucket k lies inside [from, n) when k x bucket >= from.
void ShmBucketReducer::ready(std::size_t from) {
  const std::size_t first_inside = (from + bucket_ - 1) / bucket_;
  post(num_buckets_ - std::min(first_inside, num_buckets_));
}

void ShmBucketReducer::post(std::size_t buckets) {
  if (buckets <= posted_) return;
  posted_ = buckets;
  publish(shared_.counters[static_cast<std::size_t>(shared_.rank)] + kPosted,
          step_base_ + static_cast<std::uint32_t>(posted_));
}

double ShmBucketReducer::finish() {
  post(num_buckets_);
  step_base_ += static_cast<std::uint32_t>(num_buckets_);
  posted_ = 0;
  for (std::uint32_t* counters : shared_.counters) wait_for(counters + kDone, step_base_, nullptr);
  return norm_as_reduce();
}

// The n-th bucket posted overall is bucket num_buckets - 1 - n % num_buckets: last to first.
void ShmBucketReducer::reduce_loop() {
  for (std::uint32_t seq = 0;; ++seq) {
    for (std::uint32_t* counters : shared_.counters)
      if (!wait_for(counters + kPosted, seq + 1, &stop_)) return;
    reduce_share(num_buckets_ - 1 - seq % num_buckets_);
    publish(shared_.counters[static_cast<std::size_t>(shared_.rank)] + kDone, seq + 1);
  }
}

// This rank's share of the bucket, split among ranks as reduce() splits the whole buffer.
void ShmBucketReducer::reduce_share(std::size_t bucket) {
  const std::size_t lo = bucket * bucket_, hi = std::min(shared_.n, lo + bucket_);
  const auto share =
      ShmReducer::range_of(hi - lo, shared_.rank, static_cast<int>(shared_.slots.size()));
  ShmReducer::reduce_range(shared_.slots, lo + share.lo, lo + share.hi, shared_.scale);
}

// reduce()'s norm: each rank's range of the whole buffer summed in its lanes (the same terms
// in the same order: every slot holds the results), the partials added in rank order.
double ShmBucketReducer::norm_as_reduce() const {
  const int K = static_cast<int>(shared_.slots.size());
  const float* mine = shared_.slots[static_cast<std::size_t>(shared_.rank)];
  double total = 0.0;
  for (int r = 0; r < K; ++r) {
    const auto range = ShmReducer::range_of(shared_.n, r, K);
    total += sum_squares(mine + range.lo, range.hi - range.lo);
  }
  return total;
}

}  // namespace lbt::comm
