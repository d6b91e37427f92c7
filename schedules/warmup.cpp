// Warmup shapes; see warmup.hpp.
#include "schedules/warmup.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace lbt::schedules {

namespace {
void check(const char* who, double start, double peak, std::int64_t steps) {
  if (steps <= 0) throw std::invalid_argument(std::string(who) + ": steps must be > 0");
  if (!std::isfinite(start) || !std::isfinite(peak)) {
    throw std::invalid_argument(std::string(who) + ": start and peak must be finite");
  }
}
}  // namespace

Schedule warmup_linear(double start, double peak, std::int64_t steps) {
  check("warmup_linear", start, peak, steps);
  const double slope = (peak - start) / double(steps);
  return [=](std::int64_t s) { return s < steps ? start + slope * double(s) : peak; };
}

Schedule warmup_constant(double start, double peak, std::int64_t steps) {
  check("warmup_constant", start, peak, steps);
  return [=](std::int64_t s) { return s < steps ? start : peak; };
}

Schedule warmup_exponential(double start, double peak, std::int64_t steps) {
  check("warmup_exponential", start, peak, steps);
  if (!(start > 0.0) || !(peak > 0.0)) {
    throw std::invalid_argument("warmup_exponential: start and peak must be > 0");
  }
  const double log_ratio = std::log(peak / start) / double(steps);  // per step
  return [=](std::int64_t s) { return s < steps ? start * std::exp(log_ratio * double(s)) : peak; };
}

Schedule warmup_quadratic(double start, double peak, std::int64_t steps) {
  check("warmup_quadratic", start, peak, steps);
  return [=](std::int64_t s) {
    if (s >= steps) return peak;
    const double x = double(s) / double(steps);
    return start + (peak - start) * x * x;
  };
}

}  // namespace lbt::schedules
