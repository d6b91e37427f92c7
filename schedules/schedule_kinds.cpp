// The decay registry; see schedule_kinds.hpp.
#include "schedules/schedule_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lbt::schedules::detail {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

namespace {

std::int64_t need_length(const DecayInputs& in, const char* kind) {
  if (in.length <= 0 && in.decay_start != in.warmup_steps) {  // a decay_start at or past the end
    in.config.fail(
        "schedule.decay_start",
        std::string("before the run's end for decay = \"") + kind + "\" without a decay_length",
        "step " + std::to_string(in.decay_start),
        "start the decay earlier, set schedule.decay_length, or lengthen train.steps");
  }
  if (in.length <= 0) {
    in.config.fail("schedule.decay_length", std::string("> 0 steps for decay = \"") + kind + "\"",
                   "0 (and the run ends before the decay starts)",
                   "set schedule.decay_length, or make train.steps longer than the warmup");
  }
  return in.length;
}
std::int64_t every_or_length(const DecayInputs& in, const char* kind) {
  return in.every > 0 ? in.every : need_length(in, kind);
}

}  // namespace

const std::vector<DecayKind>& decay_kinds() {
  static const std::vector<DecayKind> kinds = {
      {"constant", [](const DecayInputs&) { return s::constant(1.0); }},
      {"step",
       [](const DecayInputs& in) {
         if (in.every <= 0) {
           in.config.fail(
               "schedule.decay_every", "> 0 for decay = \"step\"", "0",
               "set the period, e.g. schedule.decay_every = 30 with decay_unit = \"epochs\"");
         }
         return s::step_decay(1.0, in.gamma, in.every);
       }},
      {"multistep",
       [](const DecayInputs& in) {
         if (in.milestones.empty()) {
           in.config.fail("schedule.milestones", "a non-empty list for decay = \"multistep\"", "[]",
                          "e.g. schedule.milestones = [30, 60, 80] with decay_unit = \"epochs\"");
         }
         return s::multistep_decay(1.0, in.gamma, in.milestones);
       }},
      {"exponential",
       [](const DecayInputs& in) {
         return s::exponential_decay(1.0, in.gamma, every_or_length(in, "exponential"),
                                     in.staircase);
       }},
      {"inverse_time",
       [](const DecayInputs& in) {
         return s::inverse_time_decay(1.0, in.rate, every_or_length(in, "inverse_time"),
                                      in.staircase);
       }},
      {"polynomial",
       [](const DecayInputs& in) {
         return s::polynomial_decay(1.0, in.final_frac, need_length(in, "polynomial"), in.power);
       }},
      {"cosine",
       [](const DecayInputs& in) {
         return s::cosine_decay(1.0, need_length(in, "cosine"), in.final_frac);
       }},
      {"linear",
       [](const DecayInputs& in) {
         return s::linear(1.0, in.final_frac, need_length(in, "linear"));
       }},
      {"inverse_sqrt",
       [](const DecayInputs& in) {
         const std::int64_t tau =
             in.every > 0 ? in.every : std::max<std::int64_t>(in.warmup_steps, 1);
         return s::inverse_sqrt_decay(1.0, double(tau));
       }},
      {"wsd",
       [](const DecayInputs& in) {
         const std::int64_t length = need_length(in, "wsd");
         auto cooldown =
             static_cast<std::int64_t>(std::ceil(in.cooldown_frac * double(length) - 1e-9));
         cooldown = std::clamp<std::int64_t>(cooldown, 1, length);
         return s::wsd(1.0, length - cooldown, cooldown, in.final_frac, in.cooldown_shape);
       }},
  };
  return kinds;
}

}  // namespace lbt::schedules::detail
