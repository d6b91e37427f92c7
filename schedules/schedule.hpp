// LR schedules as pure functions of the 0-based step, and the three ways to compose them
// (join, scaled, clamp; after optax's join_schedules). Depends on nothing but the standard
// library.
//
// Conventions, stated once here (and in optim/optimizer.hpp):
//   - `step` is 0-based: the first optimizer update is step 0 and uses lr(0).
//   - A warmup of W steps gives lr(0) = start, lr(W) = peak, and is monotone in between
//     (optax's convention; llm.c's (step + 1) / W differs, and reaches peak at W - 1).
//   - A decay phase starts where the warmup ends (it sees step - W, so decay(0) = peak is
//     reached exactly at step W) unless the config sets schedule.decay_start.
//   - Decays that reach an end value (linear, cosine, polynomial, wsd) hold it past their end.
// Builders check their arguments when called and throw std::invalid_argument; config code
// (schedules/from_config.cpp) turns that into a ConfigError naming the key.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace lbt::schedules {

using Schedule = std::function<double(std::int64_t step)>;  // pure; step is 0-based

/// lr(step) = value for every step.
Schedule constant(double value);

/// Piecewise schedule: parts[0] on [0, b[0]), parts[i] on [b[i-1], b[i]), the last part from
/// b.back() on. Part i > 0 sees step - b[i-1], so every part starts at its own step 0.
/// @param boundaries  size parts.size() - 1, strictly increasing, first one > 0.
Schedule join(std::vector<Schedule> parts, std::vector<std::int64_t> boundaries);

/// lr(step) = factor * s(step); how scaling rules enter.
Schedule scaled(Schedule s, double factor);

/// lr(step) = min(max(s(step), lo), hi); needs lo <= hi.
Schedule clamp(Schedule s, double lo, double hi);

/// lr(step) = s(step + offset); offset >= 0. Lets a decay keep its own clock when it starts
/// before the warmup ends (schedule.decay_start < warmup).
Schedule shifted(Schedule s, std::int64_t offset);

}  // namespace lbt::schedules
