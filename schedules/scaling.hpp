// LR scaling rules: peak_lr = base_lr * rule(global_batch / reference_batch).
// Linear: Goyal et al. 2017, arXiv:1706.02677 (sec. 2.1). Square root: Krizhevsky 2014,
// arXiv:1404.5997, and Hoffer et al. 2017, arXiv:1705.08741. LEGW warmup (You et al. 2019,
// "Large-batch training for LSTM and beyond", arXiv:1901.08256): the warmup length in epochs
// grows by the same factor k = global_batch / reference_batch (they pair it with sqrt scaling).
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lbt::schedules {

enum class ScalingRule { kNone, kLinear, kSqrt };

/// "none" | "linear" | "sqrt" (the names of schedule.scaling); throws std::invalid_argument.
inline ScalingRule scaling_rule(std::string_view name) {
  if (name == "none") return ScalingRule::kNone;
  if (name == "linear") return ScalingRule::kLinear;
  if (name == "sqrt") return ScalingRule::kSqrt;
  throw std::invalid_argument("unknown LR scaling rule '" + std::string(name) + "'");
}

/// k = B / B0; both must be positive (checked by the caller's config layer).
inline double batch_ratio(std::int64_t B, std::int64_t B0) {
  return double(B) / double(B0);
}

inline double linear_scaling(std::int64_t B, std::int64_t B0) {
  return batch_ratio(B, B0);
}
inline double sqrt_scaling(std::int64_t B, std::int64_t B0) {
  return std::sqrt(batch_ratio(B, B0));
}

/// The LR multiplier of `rule` at global batch B with reference batch B0.
inline double scaling_factor(ScalingRule rule, std::int64_t B, std::int64_t B0) {
  switch (rule) {
    case ScalingRule::kLinear:
      return linear_scaling(B, B0);
    case ScalingRule::kSqrt:
      return sqrt_scaling(B, B0);
    case ScalingRule::kNone:
      break;
  }
  return 1.0;
}

/// LEGW: warmup epochs at batch B = warmup epochs at B0 times B / B0.
inline double legw_warmup_epochs(double epochs_at_reference, std::int64_t B, std::int64_t B0) {
  return epochs_at_reference * batch_ratio(B, B0);
}

}  // namespace lbt::schedules
