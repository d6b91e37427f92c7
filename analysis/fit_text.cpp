// The fit's text as reports print it (lbt fit, lbt sweep, lbt plan); declared in sweep_fit.hpp.
#include <cstdio>
#include <string>

#include "analysis/sweep_fit.hpp"

namespace lbt::analysis {

std::string interval_text(const nlohmann::json& i) {
  char buf[64];
  if (i[1].is_null())
    std::snprintf(buf, sizeof buf, "[%.4g, unbounded]", i[0].get<double>());
  else
    std::snprintf(buf, sizeof buf, "[%.4g, %.4g]", i[0].get<double>(), i[1].get<double>());
  return buf;
}

std::string measured_text(const nlohmann::json& value, const nlohmann::json& ci,
                          const std::string& interval_note) {
  if (!value.is_number()) {
    if (!ci.is_array()) return "unresolved";
    char text[64];
    if (ci[1].is_null() && ci[0].get<double>() == 0.0)  // measured, bounded by nothing
      return "unresolved (no bound: never resolved from 0)";
    if (ci[1].is_null())  // bounded only below (B_crit above the sweep)
      std::snprintf(text, sizeof text, "unresolved (>= %.4g)", ci[0].get<double>());
    else  // bounded only above (S_min above the sweep: [0, hi])
      std::snprintf(text, sizeof text, "unresolved (<= %.4g)", ci[1].get<double>());
    return text;
  }
  char text[96];
  if (!ci.is_array()) {
    std::snprintf(text, sizeof text, "%.4g (no interval: one trial, or no spread)",
                  value.get<double>());
    return text;
  }
  std::snprintf(text, sizeof text, "%.4g ", value.get<double>());
  const std::string out = text + interval_text(ci);
  return interval_note.empty() ? out : out + " (" + interval_note + ")";
}

std::string coverage_note(const nlohmann::json& coverage, double level, bool lower_bound) {
  if (!coverage.is_number()) return "";
  const auto percent = [](double share) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g%%", 100 * share);
    return std::string(text);
  };
  const double c = coverage.get<double>();
  if (c >= level - 1e-12) return (lower_bound ? ">= " : "") + percent(c);
  return "only " + std::string(lower_bound ? ">= " : "") + percent(c) + ": too few trials for " +
         percent(level);
}

namespace {

// "95% bootstrap", with how many resamples gave a fit where some did not (fewer than 3 distinct
// batch sizes), or why there is no interval where too few did.
std::string bootstrap_text(const nlohmann::json& intervals) {
  const double level = intervals.value("level", 0.95);
  const int fitted = intervals.value("resamples", -1);  // -1: a fit.json that predates the count
  const int requested = intervals.value("resamples_requested", fitted);
  char text[160];
  if (fitted == 0)  // measurement_bootstrap_fits: no resample differed from the sweep itself
    std::snprintf(text, sizeof text, "no interval: no resample differs from the sweep itself");
  else if (fitted > 0 && static_cast<std::size_t>(fitted) < min_resamples(level))
    std::snprintf(text, sizeof text,
                  "no %.0f%% interval: %d resamples fitted, fewer than the %zu "
                  "it needs",
                  100 * level, fitted, min_resamples(level));
  else if (fitted < requested)
    std::snprintf(text, sizeof text, "%.0f%% bootstrap, %d of %d resamples fitted", 100 * level,
                  fitted, requested);
  else
    std::snprintf(text, sizeof text, "%.0f%% bootstrap", 100 * level);
  return text;
}

// " B = 16 (1 of 3 seeds, steps >= 2397)": a batch size left out as censored (censored_json).
std::string censored_text(const nlohmann::json& c) {
  char text[128];
  const int n =
      std::snprintf(text, sizeof text, " B = %.6g (%d of %d seeds", c["batch_size"].get<double>(),
                    c["seeds_reached"].get<int>(), c["seeds"].get<int>());
  if (c["steps_at_least"].is_number())
    std::snprintf(text + n, sizeof text - n, ", steps >= %.6g)", c["steps_at_least"].get<double>());
  else
    std::snprintf(text + n, sizeof text - n, ", the others diverged)");
  return text;
}

}  // namespace

std::string format_fit_line(const nlohmann::json& fit) {
  auto q = [&](const char* k) {
    const auto& i = fit["intervals"][k];
    if (fit[k].is_null()) return std::string(k) + " " + measured_text(fit[k], i);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s = %.4g ", k, fit[k].get<double>());
    // [no interval]: every resample gave the same value
    return buf + (i.is_array() ? interval_text(i) : std::string("[no interval]"));
  };
  std::string line = q("S_min") + ", " + q("E_min") + ", " + q("B_crit") + " (" +
                     bootstrap_text(fit["intervals"]) + ")";
  if (fit.contains("lr_law") && fit["lr_law"].value("fitted", false) &&
      fit["intervals"]["lr_law"].is_object()) {
    char buf[96];
    const auto& a = fit["intervals"]["lr_law"]["alpha"];
    std::snprintf(buf, sizeof buf, "; best lr ~ B^%.3g [%.3g, %.3g]",
                  fit["lr_law"]["alpha"].get<double>(), a[0].get<double>(), a[1].get<double>());
    line += buf;
  }
  if (fit.contains("b_crit_extrapolated") && fit["b_crit_extrapolated"].is_string())
    line += "; B_crit lies " + fit["b_crit_extrapolated"].get<std::string>() +
            " the batch sizes swept: the knee is extrapolated";
  if (!fit.value("batch_sizes_unreached", nlohmann::json::array()).empty()) {
    line += "; left out, no trial reached the target: B = " + fit["batch_sizes_unreached"].dump();
  }
  if (!fit.value("batch_sizes_censored", nlohmann::json::array()).empty()) {
    line += "; left out, fewer of the best LR's seeds reached the target than its median needs:";
    for (const auto& c : fit["batch_sizes_censored"]) line += censored_text(c);
  }
  for (const auto& u : fit.value("batch_sizes_with_unmeasured_seeds", nlohmann::json::array())) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "; B = %.6g's median is of %d seed(s): %d more of its best LR measured "
                  "nothing (failed, timed out or not run yet)",
                  u["batch_size"].get<double>(), u["seeds"].get<int>(),
                  u["seeds_unmeasured"].get<int>());
    line += text;
  }
  if (fit.contains("target_definition") && fit["target_definition"].is_string())
    line += "; steps-to-target read as " + fit["target_definition"].get<std::string>();
  if (fit.contains("warning") && fit["warning"].is_string())
    line += "\nwarning: " + fit["warning"].get<std::string>();
  if (fit.contains("sensitivity") && fit["sensitivity"].is_object() &&
      fit["sensitivity"]["warning"].is_string())
    line += "\nwarning: " + fit["sensitivity"]["warning"].get<std::string>();
  return line;
}

std::string format_measured_noise(const nlohmann::json& fit) {
  const auto& ci = fit["intervals"];
  const auto& coverage = fit["interval_coverage"];
  const double level = ci.value("level", 0.95);
  const auto held = [&](const char* key) {  // a value, or a bound only (it was left out then)
    return fit.contains(key) && (!fit[key].is_null() || ci[key].is_array());
  };
  std::string out;
  if (held("B_simple")) {
    const int trials = fit["B_simple_trials"].get<int>(),
              unbounded = fit.value("B_simple_unbounded_trials", 0);
    const std::string more =
        unbounded == 0 ? "" : "; " + std::to_string(unbounded) + " more bounded nothing";
    out +=
        "  measured B_simple (averaged over training, median of " + std::to_string(trials) +
        " best trials" + more + ") = " +
        measured_text(fit["B_simple"], ci["B_simple"], coverage_note(coverage["B_simple"], level)) +
        ", B_crit / B_simple = " +
        measured_text(fit["b_crit_over_b_simple"], ci["b_crit_over_b_simple"],
                      coverage_note(coverage["b_crit_over_b_simple"], level, true)) +
        "\n";
  }
  if (held("B_noise_measured")) {
    out += "  measured B_noise (the Hessian probes, median of " +
           std::to_string(fit["B_noise_measured_trials"].get<int>()) + " best trials) = " +
           measured_text(fit["B_noise_measured"], ci["B_noise_measured"],
                         coverage_note(coverage["B_noise_measured"], level)) +
           "\n";
  }
  return out;
}

}  // namespace lbt::analysis
