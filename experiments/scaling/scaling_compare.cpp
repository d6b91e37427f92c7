// The variants of `lbt scaling --compare`; see scaling_compare.hpp.
#include "experiments/scaling/scaling_compare.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <utility>

#include "core/error.hpp"

namespace lbt::experiments {
namespace {

const char* const kCompareExample = "e.g. --compare train.overlap_comm=false,true";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Splits at commas outside [...] and quotes: a TOML array or string value keeps its commas.
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      values.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  values.push_back(trim(current));
  return values;
}

// "train.overlap_comm", "true" -> "overlap_comm=true": a directory name and CSV field, so
// quotes go and anything but [A-Za-z0-9._+-] becomes '_'.
std::string variant_tag(const std::string& key, const std::string& value) {
  std::string tag = key.substr(key.rfind('.') + 1) + "=";
  for (char c : value) {
    if (c == '"' || c == '\'') continue;
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-';
    tag += plain ? c : '_';
  }
  return tag;
}

void check_key(const std::string& spec, const std::string& key) {
  if (key.empty()) {
    throw ConfigError("--compare '" + spec + "' is not KEY=V1,V2[,...]", kCompareExample);
  }
  // The keys only: the values of train.steps, eval_every and log_every follow --steps, which
  // this check does not know (it printed "train.steps=2", a placeholder).
  for (const std::string& set : study_sets(2)) {
    if (set.substr(0, set.find('=')) == key) {
      throw ConfigError("--compare " + key + ": the study sets " + key +
                            " itself, the same in every run of its throughput window",
                        "compare another key; --steps sets the window");
    }
  }
}

// Signed: "-0.012 [-0.020, +0.003]" (a dash between signed numbers would read as a sign).
std::string signed_range(const Spread& s, bool spread) {
  char text[128];
  std::snprintf(text, sizeof text, spread ? "%+.3f [%+.3f, %+.3f]" : "%+.3f", s.median, s.min,
                s.max);
  return text;
}

}  // namespace

std::vector<std::string> study_sets(std::int64_t steps) {
  const std::int64_t log_every = std::max<std::int64_t>(1, steps / 10);
  return {"train.threads=1", "train.steps=" + std::to_string(steps),
          "train.eval_every=" + std::to_string(steps),
          "train.log_every=" + std::to_string(log_every), "train.target=\"\"",
          // A throughput window of a few steps: no warmup (its LR does not change a step's
          // cost, and a preset's warmup in epochs may outlast the window), and the config's LR
          // at every batch: weak scaling multiplies the batch by the workers, and the linear
          // rule's LR without warmup diverged the MLP at 8 workers (B = 1024, 2026-11-27).
          // No target: a window reads no steps to one, and a loose one the untrained model
          // meets would be refused.
          "schedule.warmup=0", "schedule.scaling=none"};
}

std::vector<ScalingVariant> parse_compare(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos) {
    throw ConfigError("--compare '" + spec + "' has no '=': it is KEY=V1,V2[,...]",
                      kCompareExample);
  }
  const std::string key = trim(spec.substr(0, eq));
  check_key(spec, key);
  const std::vector<std::string> values = split_values(spec.substr(eq + 1));
  for (const std::string& value : values) {
    if (value.empty()) {
      throw ConfigError("--compare '" + spec + "' has an empty value", kCompareExample);
    }
  }
  if (values.size() < 2) {
    throw ConfigError(
        "--compare " + key + " has one value; a comparison needs two or more",
        "list the baseline first, e.g. --compare " + key + "=" + values[0] + ",OTHER");
  }
  std::vector<ScalingVariant> variants;
  for (const std::string& value : values) {
    ScalingVariant v{variant_tag(key, value), key + "=" + value};
    for (const ScalingVariant& other : variants) {
      if (other.set == v.set) {
        throw ConfigError("--compare " + key + " lists " + value + " twice",
                          "list each value once; the first is the baseline");
      }
      if (other.tag == v.tag) {
        throw ConfigError("--compare " + key + ": " + other.set.substr(key.size() + 1) + " and " +
                              value + " get the same directory name " + v.tag,
                          "compare values that differ in letters, digits or . _ + -");
      }
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

std::vector<StudyRun> repeat_runs(int variants, const std::vector<int>& workers, int repeat) {
  std::vector<StudyRun> runs;
  for (int k : workers) {
    for (int v = 0; v < variants; ++v) runs.push_back({v, k});
  }
  if (!runs.empty()) {
    const auto shift = static_cast<std::size_t>(repeat - 1) % runs.size();
    std::rotate(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(shift), runs.end());
  }
  return runs;
}

std::string single_rank_note(const std::string& key, int smallest_workers) {
  static const char* const kBetweenRanks[] = {"train.overlap_comm", "train.bucket_mb",
                                              "train.sync_every", "train.post_local_after"};
  if (smallest_workers != 1) return "";
  if (std::find(std::begin(kBetweenRanks), std::end(kBetweenRanks), key) ==
      std::end(kBetweenRanks)) {
    return "";
  }
  return "note: " + key +
         " changes only what ranks exchange; at 1 worker there is nothing to exchange, so "
         "the variants' 1-worker runs do the same work and their ratio there is the "
         "measurement's noise";
}

std::vector<VariantRatio> compare_variants(std::vector<ScalingRow> runs,
                                           const std::vector<std::string>& variants) {
  if (runs.empty() || variants.size() < 2) {
    throw Error("compare_variants: needs runs and at least two variants");
  }
  set_speedups_per_repeat(runs);
  std::map<std::pair<int, int>, const ScalingRow*> baseline;  // (K, repeat) -> baseline's run
  for (const ScalingRow& r : runs) {
    if (r.variant == variants.front()) baseline[{r.workers, r.repeat}] = &r;
  }
  std::vector<int> counts;
  for (const ScalingRow& r : runs) counts.push_back(r.workers);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<VariantRatio> out;
  for (int k : counts) {
    for (std::size_t v = 1; v < variants.size(); ++v) {
      std::vector<double> ratio, efficiency;
      for (const ScalingRow& r : runs) {
        if (r.workers != k || r.variant != variants[v]) continue;
        const auto base = baseline.find({k, r.repeat});
        if (base == baseline.end()) {
          throw Error("compare_variants: repeat " + std::to_string(r.repeat) + " has no " +
                      variants.front() + " run with " + std::to_string(k) + " workers");
        }
        ratio.push_back(r.samples_per_s / base->second->samples_per_s);
        efficiency.push_back(r.efficiency - base->second->efficiency);
      }
      if (ratio.empty()) continue;
      out.push_back({k, static_cast<int>(ratio.size()), variants[v], variants.front(),
                     spread_of(ratio), spread_of(efficiency)});
    }
  }
  return out;
}

std::string compare_csv(const std::vector<VariantRatio>& ratios) {
  std::string csv =
      "workers,variant,baseline,repeats,samples_per_s_ratio,samples_per_s_ratio_min,"
      "samples_per_s_ratio_max,efficiency_diff,efficiency_diff_min,efficiency_diff_max\n";
  for (const VariantRatio& r : ratios) {
    char line[512];
    std::snprintf(line, sizeof line, "%d,%s,%s,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", r.workers,
                  r.variant.c_str(), r.baseline.c_str(), r.repeats, r.ratio.median, r.ratio.min,
                  r.ratio.max, r.efficiency.median, r.efficiency.min, r.efficiency.max);
    csv += line;
  }
  return csv;
}

void print_compare_table(const std::vector<ScalingSummary>& rows,
                         const std::vector<VariantRatio>& ratios) {
  int width = 7;
  for (const ScalingSummary& r : rows) width = std::max(width, static_cast<int>(r.variant.size()));
  const ScalingSummary& first = rows.front();
  const bool spread = first.repeats > 1;
  std::printf(
      "\n%sefficiency against the smallest worker count of the same variant and repeat; ratio = "
      "samples/s over %s's at the same worker count and repeat, efficiency diff = efficiency "
      "minus %s's:\n",
      spread_heading(first.repeats).c_str(), first.variant.c_str(), first.variant.c_str());
  std::printf("%7s  %-*s %26s %22s %22s %28s\n", "workers", width, "variant", "samples/s",
              "efficiency", "ratio vs baseline", "efficiency diff");
  std::vector<int> counts;
  for (const ScalingSummary& r : rows) counts.push_back(r.workers);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int k : counts) {
    for (const ScalingSummary& r : rows) {
      if (r.workers != k) continue;
      std::string ratio = "(baseline)", diff;
      for (const VariantRatio& c : ratios) {
        if (c.workers == k && c.variant == r.variant) {
          ratio = spread_text(c.ratio, "%.3f", spread);
          diff = signed_range(c.efficiency, spread);
        }
      }
      const Spread sps{r.samples_per_s, r.samples_per_s_min, r.samples_per_s_max};
      const Spread eff{r.efficiency, r.efficiency_min, r.efficiency_max};
      std::printf("%7d  %-*s %26s %22s %22s %28s\n", k, width, r.variant.c_str(),
                  spread_text(sps, "%.0f", spread).c_str(),
                  spread_text(eff, "%.3f", spread).c_str(), ratio.c_str(), diff.c_str());
    }
  }
}

}  // namespace lbt::experiments
