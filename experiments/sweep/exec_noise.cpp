// A program's noise.jsonl (raw squared gradient norms at two batch sizes); see exec_trial.hpp.
// A line that is not a well-formed record is skipped and counted: one bad line costs the trial
// that sample, never the sweep (it is read again by every rerun and --collect).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include "experiments/sweep/exec_trial.hpp"
#include "noise/gradient_noise.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

struct Sample {
  std::int64_t step;
  noise::NoiseEstimate e;
};

struct NoiseLines {
  std::vector<Sample> samples;
  int skipped = 0;
  std::string first_skipped;  // "line N: why"
};

// Why `j` is not a record, or "".
std::string malformed(const nlohmann::json& j) {
  if (j.is_discarded() || !j.is_object()) return "not a JSON object";
  if (!j.contains("step") || !j["step"].is_number_integer()) return "no integer \"step\"";
  for (const char* k : {"g_small_sq", "g_big_sq", "b_small", "b_big"}) {
    if (!j.contains(k) || !j[k].is_number() || !std::isfinite(j[k].get<double>()))
      return std::string("\"") + k + "\" is not a finite number";
  }
  const double b = j["b_small"].get<double>(), B = j["b_big"].get<double>();
  if (!(b > 0 && B > b)) return "needs 0 < b_small < b_big";
  return "";
}

NoiseLines read_exec_noise_lines(const fs::path& file) {
  NoiseLines out;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return out;
  std::ifstream in(file);
  int number = 0;
  for (std::string text; next_program_line(in, text);) {
    ++number;
    if (text.empty()) continue;
    const auto j = parse_program_line(text);
    if (const std::string why = malformed(j); !why.empty()) {
      if (out.skipped++ == 0) out.first_skipped = "line " + std::to_string(number) + ": " + why;
      continue;
    }
    out.samples.push_back(
        {j["step"].get<std::int64_t>(),
         noise::two_batch_estimate(j["b_small"].get<double>(), j["g_small_sq"].get<double>(),
                                   j["b_big"].get<double>(), j["g_big_sq"].get<double>())});
  }
  return out;
}

}  // namespace

TrialNoise read_exec_noise(const fs::path& run_dir, std::int64_t steps_to_target,
                           std::int64_t budget) {
  std::vector<Sample> samples = read_exec_noise_lines(run_dir / "noise.jsonl").samples;
  // Past the trial's budget the program trained on its own; its evaluations there are not read
  // either (exec_trial.cpp), so every trial's noise covers the steps the sweep gave it.
  if (budget > 0) std::erase_if(samples, [&](const Sample& s) { return s.step > budget; });
  // B_simple of samples [from, to): the ratio of the means (each estimate is unbiased, their
  // ratio is not: average first), with Fieller's interval for the ratio of the equally weighted
  // means (NoiseScaleTracker with no decay). Resolved as lbt's own estimates are (set_ratio):
  // a value only with a bounded interval, so not from one sample, nor while |G|^2 is within
  // noise of 0 (then the interval's lower end is a bound), nor where tr(Sigma) < 0. A value
  // with no interval beside lbt's trials' nulls moved the fit's median (2026-11-30 review).
  const auto ratio = [&](std::size_t from, std::size_t to, TrialNoise::Interval& ci95) {
    noise::NoiseScaleTracker means(1.0);
    for (std::size_t i = from; i < to; ++i) means.add(samples[i].e);
    const noise::NoiseScale s = means.averaged();
    ci95 = {s.ci_low, s.ci_high};
    return s.b_simple;
  };
  TrialNoise n;
  n.records = static_cast<int>(samples.size());
  if (samples.empty()) return n;
  // A quarter of the samples, 2 to 20 (one sample has no interval, so no value).
  const std::size_t window = std::clamp<std::size_t>(samples.size() / 4, 2, 20);
  n.start = ratio(0, window, n.start_ci95);
  n.averaged = ratio(0, samples.size(), n.averaged_ci95);
  if (steps_to_target >= 0) {
    std::size_t end = 0;
    while (end < samples.size() && samples[end].step <= steps_to_target) ++end;
    n.at_target = ratio(end > window ? end - window : 0, end, n.at_target_ci95);
  }
  return n;
}

std::string exec_noise_warning(const fs::path& run_dir) {
  const fs::path file = run_dir / "noise.jsonl";
  const NoiseLines lines = read_exec_noise_lines(file);
  if (lines.skipped == 0) return "";
  return file.string() + ": " + std::to_string(lines.skipped) + " line(s) skipped, the first at " +
         lines.first_skipped + " (the protocol: {\"step\", \"g_small_sq\", \"g_big_sq\", " +
         "\"b_small\", \"b_big\"} with numbers)";
}

}  // namespace lbt::experiments
