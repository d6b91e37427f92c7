// join, scaled, clamp, shifted, constant; see schedule.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "schedules/schedule.hpp"

namespace lbt::schedules {

Schedule constant(double value) {
  if (!std::isfinite(value)) throw std::invalid_argument("constant: value must be finite");
  return [value](std::int64_t) { return value; };
}

Schedule join(std::vector<Schedule> parts, std::vector<std::int64_t> boundaries) {
  if (parts.empty()) throw std::invalid_argument("join: needs at least one part");
  if (boundaries.size() + 1 != parts.size()) {
    throw std::invalid_argument("join: needs parts.size() - 1 = " +
                                std::to_string(parts.size() - 1) + " boundaries, got " +
                                std::to_string(boundaries.size()));
  }
  for (std::size_t i = 0; i < boundaries.size(); ++i) {
    std::int64_t prev = i == 0 ? 0 : boundaries[i - 1];
    if (boundaries[i] <= prev) {
      throw std::invalid_argument("join: boundaries must be strictly increasing and > 0, got " +
                                  std::to_string(boundaries[i]) + " after " +
                                  std::to_string(prev));
    }
  }
  for (const auto& p : parts) {
    if (!p) throw std::invalid_argument("join: empty part");
  }
  if (parts.size() == 1) return std::move(parts[0]);
  return [parts = std::move(parts), boundaries = std::move(boundaries)](std::int64_t step) {
    // Few boundaries (2-3 in practice): a linear scan beats a binary search.
    std::size_t i = 0;
    while (i < boundaries.size() && step >= boundaries[i]) ++i;
    return parts[i](i == 0 ? step : step - boundaries[i - 1]);
  };
}

Schedule scaled(Schedule s, double factor) {
  if (!s) throw std::invalid_argument("scaled: empty schedule");
  if (!std::isfinite(factor)) throw std::invalid_argument("scaled: factor must be finite");
  return [s = std::move(s), factor](std::int64_t step) { return factor * s(step); };
}

Schedule clamp(Schedule s, double lo, double hi) {
  if (!s) throw std::invalid_argument("clamp: empty schedule");
  if (!(lo <= hi)) throw std::invalid_argument("clamp: needs lo <= hi");
  return [s = std::move(s), lo, hi](std::int64_t step) { return std::clamp(s(step), lo, hi); };
}

Schedule shifted(Schedule s, std::int64_t offset) {
  if (!s) throw std::invalid_argument("shifted: empty schedule");
  if (offset < 0) throw std::invalid_argument("shifted: offset must be >= 0");
  if (offset == 0) return s;
  return [s = std::move(s), offset](std::int64_t step) { return s(step + offset); };
}

}  // namespace lbt::schedules
