// Inverted dropout (Srivastava et al. 2014): in train mode each feature is kept with
// probability 1 - p and scaled by 1 / (1 - p); eval mode is the identity. Masks come from the
// RngStream::kDropout stream of (seed, rank, layer index), see seed_streams().
#pragma once
#include <cstdint>
#include <vector>

#include "nn/layer.hpp"

namespace lbt::nn {

class Dropout final : public Layer {
 public:
  Dropout(std::int64_t features, double p);
  std::string describe() const override;
  std::int64_t in_features() const override { return features_; }
  std::int64_t out_features() const override { return features_; }
  void seed_streams(std::uint64_t seed, std::uint64_t rank, std::uint64_t& index) override;
  std::string stream_state() const override;
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const override;
  void set_stream_state(const std::string& state) override;
  // x: [batch, features] -> y: same.
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  // Tests: keep the current mask for later forwards (finite differences need a fixed mask).
  void freeze_mask(bool frozen) { frozen_ = frozen; }

 private:
  std::int64_t features_;
  double p_;
  Rng rng_;
  std::vector<std::uint8_t> mask_;  // [batch, features] of the last train forward
  bool last_train_ = false, frozen_ = false;
};

}  // namespace lbt::nn
