// What lbt noise prints of its measurements: an estimate with its interval, or why it has none,
// and the one-sentence recommendation at the end of its report.
#pragma once
#include <string>

#include "experiments/noise_run.hpp"

namespace lbt::experiments {

// "12.3 [10.1, 15.2]", "not resolved (>= 40)", "not resolved (|G|^2 < 0)" where `why_none`
// says why no positive value fits, or "-" before two measurements.
std::string estimate_text(double value, double low, double high, const std::string& why_none = "");

// The critical batch the run's end suggests (B_noise where a probe ran near the end, else
// B_simple as its proxy), or why none yet.
std::string noise_recommendation(const NoiseRunResult& result);

}  // namespace lbt::experiments
