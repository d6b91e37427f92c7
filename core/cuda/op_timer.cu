// OpTimer; see op_timer.hpp.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda/check.cuh"
#include "core/cuda/op_timer.hpp"
#include "core/error.hpp"

namespace lbt::cuda {

// Events are made once and reused: pending intervals hold indices into `pool`.
struct OpTimer::Events {
  struct Pending {
    std::size_t start, stop;
    std::string label;
  };
  std::vector<cudaEvent_t> pool;
  std::size_t used = 0;
  std::size_t open = 0;  // begin()'s event, until end()
  bool is_open = false;
  std::vector<Pending> pending;

  std::size_t record() {
    if (used == pool.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      pool.push_back(e);
    }
    check(cudaEventRecord(pool[used], nullptr), "cudaEventRecord");
    return used++;
  }
};

OpTimer::OpTimer() : events_(std::make_unique<Events>()) {}

OpTimer::~OpTimer() {
  for (cudaEvent_t e : events_->pool) cudaEventDestroy(e);
}

void OpTimer::begin() {
  if (events_->is_open) throw Error("OpTimer: begin() twice without end()");
  events_->open = events_->record();
  events_->is_open = true;
}

void OpTimer::end(const std::string& label) {
  if (!events_->is_open) throw Error("OpTimer: end() without begin()");
  events_->pending.push_back({events_->open, events_->record(), label});
  events_->is_open = false;
}

void OpTimer::collect() {
  if (events_->is_open) throw Error("OpTimer: collect() inside an interval");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (const Events::Pending& p : events_->pending) {
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, events_->pool[p.start], events_->pool[p.stop]),
          "cudaEventElapsedTime");
    auto it = std::find_if(totals_.begin(), totals_.end(),
                           [&](const Total& t) { return t.label == p.label; });
    if (it == totals_.end()) it = totals_.insert(totals_.end(), Total{p.label, 0.0, 0});
    it->ms += ms;
    ++it->count;
  }
  events_->pending.clear();
  events_->used = 0;
}

}  // namespace lbt::cuda
