// The scaling study's numbers: per-repeat ratios, their medians over repeats, a run's
// throughput read back, and the CSVs and table; see scaling.hpp. run_scaling, which launches
// the runs, is in scaling_study.cpp.

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/json_file.hpp"
#include "experiments/scaling/scaling.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// The `variant` column goes last, and only with --compare, so readers of the one-config
// files (columns by position) read both.
std::string variant_field(const std::string& variant, bool compare) {
  return compare ? "," + variant : "";
}

// One (variant, K) of summarise_scaling, from runs with their speedups set; none if no run.
std::optional<ScalingSummary> summarise_count(const std::vector<ScalingRow>& runs,
                                              const std::string& variant, int k) {
  std::vector<double> throughput, speedup, efficiency;
  ScalingSummary row;
  for (const ScalingRow& r : runs) {
    if (r.workers != k || r.variant != variant) continue;
    throughput.push_back(r.samples_per_s);
    speedup.push_back(r.speedup);
    efficiency.push_back(r.efficiency);
    row.global_batch = r.global_batch;
    row.steps = r.steps;
    row.epoch_time_s = r.epoch_time_s * r.samples_per_s;  // examples per epoch: divided below
  }
  if (throughput.empty()) return std::nullopt;
  row.variant = variant;
  row.workers = k;
  row.repeats = static_cast<int>(throughput.size());
  const Spread sps = spread_of(throughput), up = spread_of(speedup), eff = spread_of(efficiency);
  row.samples_per_s = sps.median;
  row.epoch_time_s /= row.samples_per_s;  // by the median throughput
  row.samples_per_s_min = sps.min;
  row.samples_per_s_max = sps.max;
  row.speedup = up.median;
  row.speedup_min = up.min;
  row.speedup_max = up.max;
  row.efficiency = eff.median;
  row.efficiency_min = eff.min;
  row.efficiency_max = eff.max;
  return row;
}

}  // namespace

std::vector<int> repeat_order(const std::vector<int>& workers, int repeat) {
  std::vector<int> order = workers;
  if (!order.empty()) {
    const auto shift = static_cast<std::size_t>(repeat - 1) % order.size();
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shift), order.end());
  }
  return order;
}

std::string spread_heading(int repeats) {
  if (repeats > 1) return "median [min-max] over " + std::to_string(repeats) + " repeats; ";
  return "one run each (--repeats 1 measures no spread; 3 give median [min-max]); ";
}

void set_speedups_per_repeat(std::vector<ScalingRow>& runs) {
  for (ScalingRow& run : runs) {
    const ScalingRow* ref = nullptr;
    for (const ScalingRow& other : runs) {
      if (other.repeat == run.repeat && other.variant == run.variant &&
          (ref == nullptr || other.workers < ref->workers)) {
        ref = &other;
      }
    }
    run.speedup = ref->workers * run.samples_per_s / ref->samples_per_s;
    run.efficiency = run.speedup / run.workers;
  }
}

std::vector<ScalingSummary> summarise_scaling(std::vector<ScalingRow> runs) {
  if (runs.empty()) throw Error("summarise_scaling: no runs to summarise");
  set_speedups_per_repeat(runs);
  std::vector<std::string> variants;
  std::vector<int> counts;
  for (const ScalingRow& r : runs) {
    if (std::find(variants.begin(), variants.end(), r.variant) == variants.end()) {
      variants.push_back(r.variant);
    }
    counts.push_back(r.workers);
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<ScalingSummary> rows;
  for (const std::string& variant : variants) {
    for (int k : counts) {
      if (auto row = summarise_count(runs, variant, k)) rows.push_back(*row);
    }
  }
  return rows;
}

ScalingRow read_scaling_run(const fs::path& run_dir) {
  // A run's files cut short or edited: an error naming the file (nlohmann's bare parse error
  // named none, 2026-11-29 audit).
  const std::string rerun = "rerun the study (--overwrite): the run's files were cut short";
  const auto summary = read_json_object(run_dir / "summary.json", rerun);
  ScalingRow row;
  row.workers = summary.value("world_size", 0);
  row.global_batch = summary.value("global_batch", std::int64_t{0});
  row.steps = summary.value("steps", std::int64_t{0});
  const std::int64_t steps_per_epoch = summary.value("steps_per_epoch", std::int64_t{0});
  // A diverged run stops after a few steps (and may have logged none): no throughput window.
  if (summary.value("status", std::string()) == "diverged") {
    throw Error(run_dir.string() + " diverged at step " + std::to_string(row.steps) + " (" +
                    summary.value("divergence_reason", std::string("loss not finite")) +
                    "), so it has no throughput window",
                "the study runs without warmup, at the config's LR at every batch; lower it, "
                "e.g. --set optimizer.lr=0.01 (a step's cost does not depend on the LR)");
  }
  std::vector<nlohmann::json> lines;
  std::istringstream metrics(io::read_file(run_dir / "metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
        !j.contains("wall_time") || !j["wall_time"].is_number())
      throw DataError((run_dir / "metrics.jsonl").string() + ": line " +
                          std::to_string(lines.size() + 1) + " is not a step's line lbt wrote",
                      rerun);
    lines.push_back(std::move(j));
  }
  if (lines.size() < 2) {
    throw Error(run_dir.string() + "/metrics.jsonl has " + std::to_string(lines.size()) +
                    " lines; a throughput needs at least 2",
                "give the runs more steps (--steps) so that they log at least twice");
  }
  const auto& first = lines.front();
  const auto& last = lines.back();
  const double examples = static_cast<double>(last.at("step").get<std::int64_t>() -
                                              first.at("step").get<std::int64_t>()) *
                          static_cast<double>(row.global_batch);
  const double seconds = last.at("wall_time").get<double>() - first.at("wall_time").get<double>();
  // No time measured (the clock's resolution, or an edited log): no throughput. It read
  // 2.3e12 samples/s through max(seconds, 1e-9).
  if (!(seconds > 0.0) || !(examples > 0.0))
    throw DataError((run_dir / "metrics.jsonl").string() + ": its throughput window of " +
                        std::to_string(static_cast<long long>(examples)) + " examples took " +
                        std::to_string(seconds) + " s: nothing to time",
                    "give the runs more steps (--steps)");
  row.window_steps = last.at("step").get<std::int64_t>() - first.at("step").get<std::int64_t>();
  row.window_s = seconds;
  row.samples_per_s = examples / seconds;
  row.epoch_time_s = static_cast<double>(steps_per_epoch * row.global_batch) / row.samples_per_s;
  return row;
}

// scaling_runs.csv: the raw runs in the order they ran.
std::string scaling_runs_csv(const std::vector<ScalingRow>& runs, const std::vector<int>& positions,
                             bool compare) {
  std::string csv =
      "repeat,position,workers,global_batch,steps,epoch_time_s,samples_per_s,"
      "speedup,efficiency,window_steps,window_s" +
      std::string(compare ? ",variant" : "") + "\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ScalingRow& r = runs[i];
    char line[256];
    std::snprintf(line, sizeof line, "%d,%d,%d,%lld,%lld,%.6g,%.6g,%.4f,%.4f,%lld,%.6g", r.repeat,
                  positions[i], r.workers, static_cast<long long>(r.global_batch),
                  static_cast<long long>(r.steps), r.epoch_time_s, r.samples_per_s, r.speedup,
                  r.efficiency, static_cast<long long>(r.window_steps), r.window_s);
    csv += line + variant_field(r.variant, compare) + "\n";
  }
  return csv;
}

// scaling.csv: the original columns (now medians), then the spread over repeats.
std::string scaling_summary_csv(const std::vector<ScalingSummary>& rows, int cores, bool compare) {
  std::string csv =
      "workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,cores,"
      "repeats,samples_per_s_min,samples_per_s_max,efficiency_min,efficiency_max" +
      std::string(compare ? ",variant" : "") + "\n";
  for (const ScalingSummary& r : rows) {
    char line[384];
    std::snprintf(line, sizeof line, "%d,%lld,%lld,%.6g,%.6g,%.4f,%.4f,%d,%d", r.workers,
                  static_cast<long long>(r.global_batch), static_cast<long long>(r.steps),
                  r.epoch_time_s, r.samples_per_s, r.speedup, r.efficiency, cores, r.repeats);
    // One repeat measures no spread: empty cells, not a zero-width interval at the value.
    char spread[160] = ",,,,";
    if (r.repeats > 1)
      std::snprintf(spread, sizeof spread, ",%.6g,%.6g,%.4f,%.4f", r.samples_per_s_min,
                    r.samples_per_s_max, r.efficiency_min, r.efficiency_max);
    csv += line + std::string(spread) + variant_field(r.variant, compare) + "\n";
  }
  return csv;
}

void print_scaling_table(const std::vector<ScalingSummary>& rows) {
  const bool spread = rows.front().repeats > 1;
  std::printf("\n%sspeedup and efficiency against %d worker(s) of the same repeat:\n",
              spread_heading(rows.front().repeats).c_str(), rows.front().workers);
  std::printf("%7s %12s %26s %26s %22s %22s\n", "workers", "global_batch", "samples/s", "epoch_s",
              "speedup", "efficiency");
  for (const ScalingSummary& r : rows) {
    // An epoch's time is the epoch's examples over samples/s: its range is the throughput's,
    // inverted (printed to 3 digits: a short epoch read "0.00" at a fixed 2 decimals).
    const double examples = r.epoch_time_s * r.samples_per_s;
    std::printf(
        "%7d %12lld %26s %26s %22s %22s\n", r.workers, static_cast<long long>(r.global_batch),
        spread_text({r.samples_per_s, r.samples_per_s_min, r.samples_per_s_max}, "%.0f", spread)
            .c_str(),
        spread_text(
            {r.epoch_time_s, examples / r.samples_per_s_max, examples / r.samples_per_s_min},
            "%.3g", spread)
            .c_str(),
        spread_text({r.speedup, r.speedup_min, r.speedup_max}, "%.3f", spread).c_str(),
        spread_text({r.efficiency, r.efficiency_min, r.efficiency_max}, "%.3f", spread).c_str());
  }
}

}  // namespace lbt::experiments
