// `lbt plan`: what to run at scale, from a sweep's measurements. Given a budget (workers x
// micro-batch, or a step budget, or an example budget) it picks the global batch on the fitted
// curve S(B) = S_min (1 + B_noise / B) (McCandlish et al. 2018, eq. 2.11), the LR from the
// sweep's fitted LR-vs-batch law (else the scaling rule), predicts steps and examples to the
// target with bootstrap intervals, names the regime (Shallue et al. 2018, sec. 4), and writes
// a config that `lbt train` runs as is.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lbt::experiments {

struct ScalePlanOptions {
  std::filesystem::path sweep_dir;
  // Exactly one budget: workers with their micro-batch, or max steps, or max examples.
  int workers = 0;
  std::int64_t micro_batch = 0;
  std::int64_t max_steps = 0;
  std::int64_t max_examples = 0;
  std::filesystem::path out;  // the config to write (default: SWEEP_DIR/plan.toml)
  bool overwrite = false;     // replace `out` even where lbt plan did not write it
  int resamples = 2000;
  double level = 0.95;
  double regime_tolerance = 0.2;  // as lbt fit's
};

// Plans, writes the config and its plan_json_path, and returns that JSON's content. Throws
// ConfigError for a budget that cannot reach the target (naming the smallest that can), and,
// before any work, for an existing `out` whose first line is not lbt plan's header (unless
// `overwrite`).
nlohmann::json plan_at_scale(const ScalePlanOptions& options);

// The plan as lines for a terminal.
std::string format_scale_plan(const nlohmann::json& plan);

// The first words of every config lbt plan writes: how it knows a file it may replace.
inline constexpr std::string_view kPlanHeader = "# Written by lbt plan from ";

// lbt plan replaces only its own config (a file whose first line is kPlanHeader) and its own
// JSON (an object with a "config" key) unless told to: an --out that names someone's file must
// not cost them the file. Throws ConfigError, also for an --out ending in .json.
void check_plan_out(const std::filesystem::path& out, bool overwrite);

// The plan's JSON beside its config: plan.toml -> plan.json, /tmp/b512.toml -> /tmp/b512.json,
// /tmp/b512 -> /tmp/b512.json.
// It was always FROM_DIR/plan.json, so two plans with different --out replaced each other's, and
// a read-only sweep directory could not be planned from.
std::filesystem::path plan_json_path(const std::filesystem::path& out);

}  // namespace lbt::experiments
