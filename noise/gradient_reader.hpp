// The gradient buffer as the noise estimator reads it (online_estimator.hpp): per-segment
// squared norms in double, of the buffer and of its change since the previous read, wherever
// the buffer lives. The host's reader is here; the GPU's is noise/cuda/gradient_reader.hpp.
#pragma once
#include <cstddef>
#include <span>

#include "core/params.hpp"

namespace lbt::noise {

class GradientReader {
 public:
  virtual ~GradientReader() = default;
  // out[s] = |g_s|^2 for each segment s of the table the reader was made with.
  virtual void segment_sq_norms(std::span<double> out) = 0;
  // out[s] = |g_s - p_s|^2, p the buffer at the previous call (0 when `first`), each difference
  // rounded to float before it is squared in double; the buffer becomes p for the next call
  // unless `last` (nothing reads it then).
  virtual void segment_change_sq_norms(std::span<double> out, bool first, bool last) = 0;
};

// The host's flat buffer; `previous` ([num_params], the caller's) holds p between calls.
class HostGradientReader final : public GradientReader {
 public:
  HostGradientReader(std::span<const float> grads, std::span<const Segment> segments,
                     float* previous)
      : grads_(grads), segments_(segments), previous_(previous) {}
  void segment_sq_norms(std::span<double> out) override;
  void segment_change_sq_norms(std::span<double> out, bool first, bool last) override;

 private:
  std::span<const float> grads_;
  std::span<const Segment> segments_;
  float* previous_;
};

}  // namespace lbt::noise
