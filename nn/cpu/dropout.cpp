// Dropout; see dropout.hpp. Mask drawing is serial (one stream, reproducible whatever the
// thread count): 32 bits per draw compared with a threshold.
#include "nn/cpu/dropout.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace lbt::nn {

Dropout::Dropout(std::int64_t features, double p)
    : features_(features), p_(p), rng_(make_rng(0, RngStream::kDropout)) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw ConfigError("Dropout probability must be in [0, 1), got " + std::to_string(p));
  }
}

std::string Dropout::describe() const {
  return "Dropout(" + std::to_string(p_) + ")";
}

void Dropout::seed_streams(std::uint64_t seed, std::uint64_t rank, std::uint64_t& index) {
  rng_ = make_rng(seed, RngStream::kDropout, (rank << 20) + index++);
}

// std::mersenne_twister_engine's text form is its full state ([rand.req.eng]).
std::string Dropout::stream_state() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void Dropout::set_stream_state(const std::string& state) {
  std::istringstream in(state);
  in >> rng_;
  if (!in) throw DataError("Dropout: the saved random-stream state does not parse", "");
}

// The mask of the last train forward, one byte per value.
std::int64_t Dropout::workspace_bytes(std::int64_t batch, int) const {
  return p_ > 0.0 ? batch * features_ : 0;
}

void Dropout::forward(const float* x, float* y, std::int64_t batch, bool train) {
  const std::int64_t n = batch * features_;
  last_train_ = train && p_ > 0.0;
  if (!last_train_) {
    std::copy(x, x + n, y);
    return;
  }
  if (!frozen_ || static_cast<std::int64_t>(mask_.size()) < n) {
    if (static_cast<std::int64_t>(mask_.size()) < n) mask_.resize(static_cast<std::size_t>(n));
    const std::uint64_t threshold = static_cast<std::uint64_t>(p_ * 4294967296.0);
    for (std::int64_t i = 0; i < n; i += 2) {
      const std::uint64_t r = rng_();
      mask_[i] = (r & 0xffffffffu) >= threshold;
      if (i + 1 < n) mask_[i + 1] = (r >> 32) >= threshold;
    }
  }
  const float scale = static_cast<float>(1.0 / (1.0 - p_));
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
  for (std::int64_t i = 0; i < n; ++i) y[i] = mask_[i] ? x[i] * scale : 0.0f;
}

void Dropout::backward(const float*, const float*, const float* dy, float* dx, std::int64_t batch,
                       bool) {
  if (!dx) return;
  const std::int64_t n = batch * features_;
  if (!last_train_) {
    std::copy(dy, dy + n, dx);
    return;
  }
  const float scale = static_cast<float>(1.0 / (1.0 - p_));
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
  for (std::int64_t i = 0; i < n; ++i) dx[i] = mask_[i] ? dy[i] * scale : 0.0f;
}

}  // namespace lbt::nn
