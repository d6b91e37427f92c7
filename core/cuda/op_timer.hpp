// GPU time between two points of the stream, summed per label: where a step's time goes on the
// device (bench/gpu_layer_times.cpp). Each begin/end pair records a CUDA event on the stream, so
// the host does not wait; collect() waits once and reads the elapsed times. An interval measures
// the stream from one event to the next: the op's kernels, plus any time the GPU sat waiting for
// the host's next launch (a launch-bound op shows as the host's time, not the kernels').
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lbt::cuda {

class OpTimer {
 public:
  struct Total {
    std::string label;
    double ms = 0.0;         // summed over its intervals
    std::int64_t count = 0;  // intervals
  };

  OpTimer();
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  void begin();                        // an interval starts here on the stream
  void end(const std::string& label);  // ... and ends here, counted under `label`
  void collect();                      // waits for the stream; adds the pending intervals
  const std::vector<Total>& totals() const { return totals_; }  // labels in first-seen order

 private:
  struct Events;
  std::unique_ptr<Events> events_;
  std::vector<Total> totals_;
};

}  // namespace lbt::cuda
