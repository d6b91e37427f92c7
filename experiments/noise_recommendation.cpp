// The estimate's text and the recommendation lbt noise prints; see noise_recommendation.hpp.
#include "experiments/noise_recommendation.hpp"

#include <cmath>
#include <cstdio>

#include "noise/gradient_noise.hpp"

namespace lbt::experiments {

// "12.3 [10.1, 15.2]", "not resolved (>= 40)", "not resolved (|G|^2 < 0)" where `why_none`
// says why no positive value fits, or "-" before two measurements.
std::string estimate_text(double value, double low, double high, const std::string& why_none) {
  char buf[96];
  if (!why_none.empty()) return "not resolved (" + why_none + ")";
  if (std::isfinite(value) && std::isfinite(high)) {
    std::snprintf(buf, sizeof buf, "%.4g [%.4g, %.4g]", value, low, high);
  } else if (std::isfinite(low) && low > 0) {
    std::snprintf(buf, sizeof buf, "not resolved (>= %.4g)", low);
  } else if (std::isfinite(low)) {
    return "not resolved";  // bounded by 0 alone
  } else {
    return "-";
  }
  return buf;
}

namespace {

// A batch size as the recommendation prints it: whole from 100, 3 digits below (5.5e-15 read
// "0 [0, 0]").
std::string batch_text(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, b >= 100 ? "%.0f" : "%.3g", b);
  return buf;
}

// What a critical batch of about `b` says of the batch to train at (S = S_min (1 + b / B)).
std::string batch_advice(double b) {
  if (b < 1.0) {  // "up to about 0" from 5.5e-15 read as advice (2026-11-29 audit)
    return "so a batch of 1 already needs about as few steps as any larger one, which mostly "
           "spend more examples for little gain";
  }
  return "so global batches up to about " + batch_text(b) +
         " should cut steps almost in proportion, while larger ones mostly spend more examples "
         "for little gain";
}

}  // namespace

std::string noise_recommendation(const NoiseRunResult& result) {
  char buf[800];
  // McCandlish et al. 2018 (eq. 2.8, sec. 2.3): the critical batch is about B_noise, which the
  // Hessian probe measures; B_simple equals it only where the Hessian is a multiple of the
  // identity, and is the cheaper proxy where no probe ran, or none near the end (both grow as
  // the loss falls: a probe from the start would understate it).
  const bool b_noise_now = result.b_noise_step + result.window_steps >= result.last_step;
  if (b_noise_now && std::isfinite(result.final_b_noise) && std::isfinite(result.b_noise_high)) {
    // "-" is the table's empty cell; in a sentence it read "reads -: it equals" (2026-11-30).
    std::string b_simple =
        estimate_text(result.final_b_simple, result.final_low, result.final_high);
    if (b_simple == "-") b_simple = "nothing yet (no window of measurements has ended)";
    std::snprintf(
        buf, sizeof buf,
        "Recommendation: the critical batch size is about B_noise (McCandlish et al. 2018), "
        "measured by the Hessian probe at step %lld: %s [%s, %s], %s. B_simple now (over "
        "the last %lld steps), its cheaper proxy, reads %s: it equals B_noise only where the "
        "Hessian is a multiple of the identity. Both grow as the loss falls: re-measure later in "
        "training.",
        static_cast<long long>(result.b_noise_step), batch_text(result.final_b_noise).c_str(),
        batch_text(result.b_noise_low).c_str(), batch_text(result.b_noise_high).c_str(),
        batch_advice(result.final_b_noise).c_str(), static_cast<long long>(result.window_steps),
        b_simple.c_str());
  } else if (std::isfinite(result.final_b_simple) && std::isfinite(result.final_high) &&
             !(result.final_low > 0.0 && result.final_high <= 10.0 * result.final_low)) {
    // An interval over 10x wide sizes no batch: "up to about 49" from [0, 4718] read as firm
    // advice (2026-11-29 audit).
    std::snprintf(buf, sizeof buf,
                  "Recommendation: none yet. B_simple now (over the last %lld steps) ~ %.0f "
                  "[%.0f, %.0f] at the end of this run: an interval too wide (over 10x) to size a "
                  "batch from. Run longer, measure more often (noise.every), or widen "
                  "noise.window_steps.",
                  static_cast<long long>(result.window_steps), result.final_b_simple,
                  result.final_low, result.final_high);
  } else if (std::isfinite(result.final_b_simple) && std::isfinite(result.final_high)) {
    std::snprintf(
        buf, sizeof buf,
        "Recommendation: the critical batch size is about B_noise (McCandlish et al. "
        "2018), and B_simple now (over the last %lld steps) ~ %s [%s, %s] at the end of this "
        "run is its proxy, %s (B_simple grows as the loss falls, so re-measure later in "
        "training).",
        static_cast<long long>(result.window_steps), batch_text(result.final_b_simple).c_str(),
        batch_text(result.final_low).c_str(), batch_text(result.final_high).c_str(),
        batch_advice(result.final_b_simple).c_str());
  } else if (result.final_window_samples < noise::NoiseScaleTracker::kLineSamples) {
    // Too few measurements for the window's line: not a B_simple that failed to resolve.
    std::snprintf(buf, sizeof buf,
                  "Recommendation: none yet. The run's last window holds %lld measurement(s), and "
                  "B_simple now needs 3 (noise.every apart within noise.window_steps = %lld): run "
                  "longer.",
                  static_cast<long long>(result.final_window_samples),
                  static_cast<long long>(result.window_steps));
  } else {
    // "at least 0" would say nothing: a bound only where the interval's lower end has one.
    char bound[96] = "";
    if (result.final_low > 0.0)
      std::snprintf(bound, sizeof bound,
                    ", so the noise scale is at least %.3g and unbounded above", result.final_low);
    std::snprintf(buf, sizeof buf,
                  "Recommendation: none yet. B_simple is not resolved at the end of this run: "
                  "|G|^2 is not resolved above 0 over the last %lld steps%s. Run longer, measure "
                  "more often (noise.every), widen noise.window_steps, or raise the large batch.",
                  static_cast<long long>(result.window_steps), bound);
  }
  return buf;
}

}  // namespace lbt::experiments
