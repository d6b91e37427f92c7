// Decay shapes; see decay.hpp.
#include "schedules/decay.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace lbt::schedules {

namespace {
void require(bool ok, const char* who, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
}
bool finite(double x) { return std::isfinite(x); }
}  // namespace

Schedule linear(double from, double to, std::int64_t steps) {
  require(steps > 0, "linear", "steps must be > 0");
  require(finite(from) && finite(to), "linear", "from and to must be finite");
  const double slope = (to - from) / double(steps);
  return [=](std::int64_t t) { return t < steps ? from + slope * double(t) : to; };
}

Schedule step_decay(double peak, double gamma, std::int64_t every) {
  require(every > 0, "step_decay", "every must be > 0");
  require(finite(peak) && finite(gamma) && gamma > 0.0, "step_decay", "gamma must be > 0");
  return [=](std::int64_t t) { return peak * std::pow(gamma, double(t / every)); };
}

Schedule multistep_decay(double peak, double gamma, std::vector<std::int64_t> milestones) {
  require(finite(peak) && finite(gamma) && gamma > 0.0, "multistep_decay", "gamma must be > 0");
  require(!milestones.empty(), "multistep_decay", "needs at least one milestone");
  for (std::size_t i = 0; i < milestones.size(); ++i) {
    require(milestones[i] > (i == 0 ? 0 : milestones[i - 1]), "multistep_decay",
            "milestones must be > 0 and strictly increasing");
  }
  // lrs[i]: the value after i milestones, precomputed so evaluation is a scan, no pow.
  std::vector<double> lrs(milestones.size() + 1, peak);
  for (std::size_t i = 1; i < lrs.size(); ++i) lrs[i] = lrs[i - 1] * gamma;
  return [milestones = std::move(milestones), lrs = std::move(lrs)](std::int64_t t) {
    std::size_t i = 0;
    while (i < milestones.size() && t >= milestones[i]) ++i;
    return lrs[i];
  };
}

Schedule exponential_decay(double peak, double gamma, std::int64_t every, bool staircase) {
  require(every > 0, "exponential_decay", "every must be > 0");
  require(finite(peak) && finite(gamma) && gamma > 0.0, "exponential_decay", "gamma must be > 0");
  const double log_gamma = std::log(gamma);
  return [=](std::int64_t t) {
    const double periods = staircase ? double(t / every) : double(t) / double(every);
    return peak * std::exp(log_gamma * periods);
  };
}

Schedule inverse_time_decay(double peak, double rate, std::int64_t every, bool staircase) {
  require(every > 0, "inverse_time_decay", "every must be > 0");
  require(finite(peak) && finite(rate) && rate >= 0.0, "inverse_time_decay", "rate must be >= 0");
  return [=](std::int64_t t) {
    const double periods = staircase ? double(t / every) : double(t) / double(every);
    return peak / (1.0 + rate * periods);
  };
}

Schedule polynomial_decay(double peak, double end, std::int64_t steps, double power) {
  require(steps > 0, "polynomial_decay", "steps must be > 0");
  require(finite(peak) && finite(end), "polynomial_decay", "peak and end must be finite");
  require(finite(power) && power > 0.0, "polynomial_decay", "power must be > 0");
  return [=](std::int64_t t) {
    if (t >= steps) return end;
    return end + (peak - end) * std::pow(1.0 - double(t) / double(steps), power);
  };
}

Schedule cosine_decay(double peak, std::int64_t steps, double final_frac) {
  require(steps > 0, "cosine_decay", "steps must be > 0");
  require(finite(peak), "cosine_decay", "peak must be finite");
  require(finite(final_frac) && final_frac >= 0.0, "cosine_decay", "final_frac must be >= 0");
  const double end = final_frac * peak;
  const double omega = std::numbers::pi / double(steps);
  return [=](std::int64_t t) {
    if (t >= steps) return end;
    return end + (peak - end) * 0.5 * (1.0 + std::cos(omega * double(t)));
  };
}

Schedule inverse_sqrt_decay(double peak, double timescale) {
  require(finite(peak), "inverse_sqrt_decay", "peak must be finite");
  require(finite(timescale) && timescale > 0.0, "inverse_sqrt_decay", "timescale must be > 0");
  return [=](std::int64_t t) { return peak / std::sqrt(1.0 + double(t) / timescale); };
}

Schedule wsd(double peak, std::int64_t stable_steps, std::int64_t cooldown_steps,
             double final_frac, CooldownShape shape) {
  require(stable_steps >= 0, "wsd", "stable_steps must be >= 0");
  require(cooldown_steps > 0, "wsd", "cooldown_steps must be > 0");
  require(finite(final_frac) && final_frac >= 0.0, "wsd", "final_frac must be >= 0");
  Schedule cooldown;
  const double end = final_frac * peak;
  switch (shape) {
    case CooldownShape::kLinear: cooldown = linear(peak, end, cooldown_steps); break;
    case CooldownShape::kCosine: cooldown = cosine_decay(peak, cooldown_steps, final_frac); break;
    case CooldownShape::kOneMinusSqrt:
      cooldown = [=](std::int64_t t) {
        if (t >= cooldown_steps) return end;
        return end + (peak - end) * (1.0 - std::sqrt(double(t) / double(cooldown_steps)));
      };
      break;
  }
  if (stable_steps == 0) return cooldown;
  return join({constant(peak), std::move(cooldown)}, {stable_steps});
}

}  // namespace lbt::schedules
