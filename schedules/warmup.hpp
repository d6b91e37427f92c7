// Warmup shapes: the LR rises from `start` at step 0 to `peak` at step `steps` and stays at
// peak afterwards (so a warmup is a complete schedule by itself; join puts a decay after it).
// Linear ("gradual") warmup and constant warmup: Goyal et al. 2017, arXiv:1706.02677, sec. 2.2.
// Exponential warmup rises geometrically; quadratic is (step / steps)^2.
#pragma once
#include <cstdint>

#include "schedules/schedule.hpp"

namespace lbt::schedules {

/// lr(s) = start + (peak - start) * s / steps for s < steps, then peak. steps > 0.
Schedule warmup_linear(double start, double peak, std::int64_t steps);

/// lr(s) = start for s < steps, then peak (Goyal et al.'s "constant warmup"). steps > 0.
Schedule warmup_constant(double start, double peak, std::int64_t steps);

/// lr(s) = start * (peak / start)^(s / steps) for s < steps, then peak. start, peak > 0.
Schedule warmup_exponential(double start, double peak, std::int64_t steps);

/// lr(s) = start + (peak - start) * (s / steps)^2 for s < steps, then peak. steps > 0.
Schedule warmup_quadratic(double start, double peak, std::int64_t steps);

}  // namespace lbt::schedules
