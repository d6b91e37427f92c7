// LR schedules as pure functions of the 0-based step. Convention (stated once, here and in
// optim/optimizer.hpp): the first update is step 0 and uses lr(0).
#pragma once
#include <cstdint>
#include <functional>

namespace lbt::schedules {

using Schedule = std::function<double(std::int64_t step)>;

inline Schedule constant(double value) {
  return [value](std::int64_t) { return value; };
}

}  // namespace lbt::schedules
