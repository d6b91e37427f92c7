// A measurement as lbt's JSON files hold it: the number, or null where there is none (NaN: not
// measured or not resolved; inf: unbounded), never a NaN or infinity that JSON cannot hold.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>

namespace lbt {

inline nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace lbt
