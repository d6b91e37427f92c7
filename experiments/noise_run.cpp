// run_noise; see noise_run.hpp.
#include "experiments/noise_run.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/rng.hpp"
#include "experiments/hessian_probe.hpp"
#include "experiments/noise_recommendation.hpp"
#include "experiments/run_check.hpp"
#include "noise/gradient_noise.hpp"
#include "noise/noise_keys.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/noise_log.hpp"

namespace lbt::experiments {
namespace {

// Whether the device computes per-example norms for a layer list (an MLP of Linear layers with
// biases and ReLUs, as trainer::per_example_support says of a built model), without building it:
// the list's shapes come from the data.
noise::PerExampleSupport device_support(const std::vector<nn::LayerSpec>& layers,
                                        const std::string& device) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const nn::LayerSpec& l = layers[i];
    if ((l.type != "linear" && l.type != "relu") || (l.type == "linear" && !l.bias))
      return {false, "model.device=" + device +
                         " computes per-example gradient norms for MLPs only (Linear layers with "
                         "biases and ReLUs), not model.layers[" +
                         std::to_string(i) + "] (" + l.type + ")"};
  }
  return {true, ""};
}

// B_simple reads the spread of the gradient over a step's examples against its mean
// (McCandlish et al. 2018, app. A.1): a global batch of 1 has none, and lbt noise trained on,
// measuring nothing, and printed "B_simple ~ 0 [0, 0]" (2026-11-29 audit).
void refuse_batch_of_one(Config& config) {
  Config probe = config;  // resolving records what it read; the run resolves again
  if (trainer::resolve_run_config(probe, launched_ranks(config)).train.global_batch >= 2) return;
  throw ConfigError(
      "lbt noise at a global batch of 1 measures nothing: B_simple reads the spread of the "
      "gradient over a step's examples",
      "raise train.global_batch, e.g. --set train.global_batch=32");
}

// One process, a model whose per-example norms are not exact (BatchNorm couples examples; on a
// GPU, anything but an MLP) and no layout in the config: the two-batch form needs small batches, so
// split the global batch into micro-batches (4 of >= 32 examples where it divides, else 2).
// A BatchNorm then normalises over each micro-batch, which the note says where there is one.
// Returns the note ("" when nothing changed).
std::string choose_noise_layout(Config& config) {
  if (config.has("train.micro_batch") || config.has("train.accum_steps")) return "";
  Config probe = config;  // resolving records what it read; the run resolves again
  const int world = launched_ranks(config);
  const trainer::RunConfig run = trainer::resolve_run_config(probe, world);
  if (!run.noise.enabled || !run.noise.two_batch || world >= 2) return "";
  // A layer list's shape comes from the data, not read here: its layers say whether they
  // couple examples (batchnorm, residual) without being built.
  noise::PerExampleSupport support;
  bool coupled = false;  // a BatchNorm: it then normalises over each micro-batch
  if (run.train.model_layers.empty()) {
    auto model = nn::Model::from_spec(run.train.model_spec, run.train.init);
    auto rng = make_rng(run.train.seed, RngStream::kInit);
    model->build(rng);
    support = trainer::per_example_support(*model, run.train.device);
    for (const auto& layer : model->layers()) coupled = coupled || layer->couples_examples();
  } else if (std::string reason = nn::coupling_layer(run.train.model_layers); !reason.empty()) {
    support = {false, reason};
    coupled = true;
  } else if (run.train.device != "cpu") {
    support = device_support(run.train.model_layers, run.train.device);
  }
  if (support.exact) return "";
  const std::int64_t B = run.train.global_batch;
  const std::int64_t accum = B % 4 == 0 && B / 4 >= 32 ? 4 : B % 2 == 0 ? 2 : 0;
  if (accum == 0) return "";  // choose_method then names the fix
  config.set("train.accum_steps=" + std::to_string(accum));
  return "per-example norms are not exact for " + run.train.model_name() + " (" + support.reason +
         "), so lbt noise splits the global batch of " + std::to_string(B) + " into " +
         std::to_string(accum) + " micro-batches of " + std::to_string(B / accum) +
         " (train.accum_steps = " + std::to_string(accum) + ") for the two-batch estimator" +
         (coupled ? "; BatchNorm normalises over each micro-batch" : "") +
         ". Set train.accum_steps or train.micro_batch to choose another layout.";
}

// On a device (lbt noise goes on in lbt-cuda, as lbt train does) B_simple is measured as on the
// CPU, but B_noise's Hessian probe runs on the host's model only: a probe lbt noise would run
// (at --at-steps while noise.hessian.enabled, or every noise.hessian.every steps) is refused at
// --check as at the start, before anything is written.
void refuse_device_probe(Config& config, const std::vector<std::int64_t>& at_steps) {
  const std::string device = config.get_string(Schema::in(trainer::train_keys(), "model.device"));
  if (device == "cpu" || !hessian_probe(read_hessian_options(config), at_steps)) return;
  throw ConfigError("model.device=" + device +
                        " has no B_noise probe (noise.hessian), which lbt noise runs at "
                        "--at-steps or every noise.hessian.every steps",
                    "set noise.hessian.enabled=false and noise.hessian.every=0 to measure "
                    "B_simple alone on the GPU, or model.device=cpu");
}

// lbt noise turns the estimator on; a config that turns it off is refused (lbt noise then
// printed B_simple as "0 [0, 0]" over "the last 0 steps").
void enable_noise(Config& config) {
  if (!config.has("noise.enabled")) config.set("noise.enabled=true");
  if (!config.get_bool(Schema::in(noise::noise_keys(), "noise.enabled"))) {
    throw ConfigError(
        "lbt noise measures the noise scale, and noise.enabled = false turns its "
        "estimator off",
        "drop noise.enabled = false (lbt train runs without the estimator)");
  }
  // a measurement, not a training run: every micro-batch as a small batch (twice the samples of
  // training's default "first" for 0.8% more of a step at B = 128; noise/online_estimator.hpp)
  if (!config.has("noise.small_batches")) config.set("noise.small_batches=all");
}

// noise.jsonl's estimator lines; its method line fills result's method, reason and layout.
std::vector<nlohmann::json> read_noise_lines(const std::filesystem::path& run_dir,
                                             NoiseRunResult& result) {
  std::ifstream in = io::open_regular_file(run_dir / "noise.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // a torn line
    if (j.contains("method") && j["method"].is_string()) {
      result.method = j["method"].get<std::string>();
      result.method_reason = j.value("reason", std::string());
      result.layout_note = j.value("layout", std::string());
    }
    if (j.contains("estimator") && j.contains("step") && j["step"].is_number_integer())
      lines.push_back(std::move(j));
  }
  return lines;
}

double number_or_nan(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : NAN;
}

// Why a ratio T / G measured in `line` has no interval at all (noise/gradient_noise.hpp,
// reported_ratio: Fieller's set wholly below 0): the estimate of G or of T is below 0. "" where
// it has one, or was not measured yet: the estimates null, or fewer than `needed` measurements
// in `samples_key` (one draw below 0 read as significantly below 0; 2026-11-29 audit).
std::string why_no_interval(const nlohmann::json& line, const nlohmann::json& interval,
                            const char* G_key, const char* G_name, const char* T_key,
                            const char* T_name, const char* samples_key = nullptr,
                            double needed = 0) {
  if (interval.is_array() && !interval[0].is_null()) return "";
  if (samples_key && !(number_or_nan(line.value(samples_key, nlohmann::json())) >= needed))
    return "";
  if (number_or_nan(line.value(G_key, nlohmann::json())) < 0.0) return G_name + std::string(" < 0");
  if (number_or_nan(line.value(T_key, nlohmann::json())) < 0.0) return T_name + std::string(" < 0");
  return "";
}

// One estimator's measurement as a row for step s (the line measured at `line`'s step).
NoiseAtStep noise_row(std::int64_t s, const char* name, const nlohmann::json& line,
                      NoiseRunResult& result) {
  const auto num = number_or_nan;
  NoiseAtStep row{s, line["step"].get<std::int64_t>(), name};
  if (std::string(name) == "hessian") {
    row.b_noise = num(line["b_noise"]);
    row.ci_low = num(line["b_noise_ci95"][0]);
    row.ci_high = num(line["b_noise_ci95"][1]);
    row.b_noise_why_none =
        why_no_interval(line, line["b_noise_ci95"], "gHg", "G^T H G", "tr_H_sigma", "tr(H Sigma)");
    row.b_simple = num(line["b_simple_same_batches"]);
    if (const auto ci = line.find("b_simple_same_batches_ci95"); ci != line.end()) {
      row.same_low = num((*ci)[0]);
      row.same_high = num((*ci)[1]);
    }
  } else {
    row.b_simple = num(line["b_simple"]);
    row.ci_low = num(line["b_simple_ci95"][0]);
    row.ci_high = num(line["b_simple_ci95"][1]);
    row.b_simple_ema = num(line["b_simple_ema"]);
    row.ema_low = num(line["b_simple_ema_ci95"][0]);
    row.ema_high = num(line["b_simple_ema_ci95"][1]);
    // "now" is the window's line (three measurements), the average an EMA (two).
    row.why_none =
        why_no_interval(line, line["b_simple_ci95"], "G_sq", "|G|^2", "trace_sigma", "tr(Sigma)",
                        "window_samples", noise::NoiseScaleTracker::kLineSamples);
    row.ema_why_none = why_no_interval(line, line["b_simple_ema_ci95"], "G_sq_ema", "|G|^2",
                                       "trace_sigma_ema", "tr(Sigma)", "samples", 2);
    result.window_steps = line.value("window_steps", std::int64_t{0});
  }
  return row;
}

// The last measurement at or before each requested step, per estimator; then the headline:
// the last two_batch line's "now" value, else per_example's.
void read_noise_rows(const std::vector<nlohmann::json>& lines, const std::vector<std::int64_t>& at,
                     NoiseRunResult& result) {
  for (std::int64_t s : at) {
    for (const char* name : {"two_batch", "per_example", "hessian"}) {
      const nlohmann::json* best = nullptr;
      for (const auto& j : lines) {
        if (j["estimator"] == name && j["step"].get<std::int64_t>() <= s) best = &j;
      }
      if (best) result.rows.push_back(noise_row(s, name, *best, result));
    }
  }
  for (const char* name : {"per_example", "two_batch"}) {
    for (const auto& j : lines) {
      if (j["estimator"] == name) {
        result.final_b_simple = number_or_nan(j["b_simple"]);
        result.final_low = number_or_nan(j["b_simple_ci95"][0]);
        result.final_high = number_or_nan(j["b_simple_ci95"][1]);
        result.final_window_samples = j.value("window_samples", std::int64_t{0});
      }
    }
  }
  for (const auto& j : lines) {
    result.last_step = std::max(result.last_step, j["step"].get<std::int64_t>());
    if (j["estimator"] != "hessian") continue;
    result.b_noise_step = j["step"].get<std::int64_t>();
    result.final_b_noise = number_or_nan(j["b_noise"]);
    result.b_noise_low = number_or_nan(j["b_noise_ci95"][0]);
    result.b_noise_high = number_or_nan(j["b_noise_ci95"][1]);
  }
}

}  // namespace

void check_noise_config(Config& config, const std::vector<std::int64_t>& at_steps) {
  refuse_device_probe(config, at_steps);
  enable_noise(config);
  refuse_batch_of_one(config);
  read_hessian_options(config);
  choose_noise_layout(config);
  trainer::resolve_run_config(config, 1);
}

namespace {

// --at-steps past the run's last step (steps - 1) report the last measurement before it, and no
// B_noise probe ran there: said, not left to the "measured" column.
std::string past_end_note(const std::vector<std::int64_t>& at, std::int64_t steps) {
  std::string past;
  for (std::int64_t s : at)
    if (s >= steps) past += (past.empty() ? "" : ", ") + std::to_string(s);
  if (past.empty()) return "";
  return "past the run's last step (" + std::to_string(steps - 1) + "), --at-steps " + past +
         " report the last measurement before it, and no B_noise probe ran there (--steps or "
         "train.steps reaches them)";
}

}  // namespace

NoiseRunResult run_noise(Config& config, const NoiseRunOptions& options) {
  if (options.steps > 0) config.set("train.steps=" + std::to_string(options.steps));
  refuse_device_probe(config, options.at_steps);
  enable_noise(config);
  refuse_batch_of_one(config);
  const HessianOptions h = read_hessian_options(config);
  NoiseRunOptions o = options;
  o.run.noise_layout_note = choose_noise_layout(config);
  o.run.warmup_past_run = schedules::WarmupPastRun::kNote;
  o.run.refuse_target_met_at_start = false;
  o.run.noise_report = true;
  std::vector<std::int64_t> at =
      o.at_steps;  // in order, each step once (a repeat was reported twice)
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  o.run.probe = hessian_probe(h, at);
  NoiseRunResult result;
  result.run = run_training(config, o.run);

  if (at.empty() && result.run.outcome.steps > 0) at.push_back(result.run.outcome.steps - 1);
  read_noise_file(result.run.run_dir, at, result);
  result.past_end_note = past_end_note(at, result.run.outcome.steps);
  return result;
}

void read_noise_file(const std::filesystem::path& run_dir, const std::vector<std::int64_t>& at,
                     NoiseRunResult& result) {
  read_noise_rows(read_noise_lines(run_dir, result), at, result);
  result.recommendation = noise_recommendation(result);
}

std::string format_noise_report(const NoiseRunResult& r) {
  std::ostringstream ss;
  char buf[256];
  if (!r.layout_note.empty()) ss << "Layout: " << r.layout_note << "\n";
  if (!r.method.empty()) ss << "Method: " << r.method << " (" << r.method_reason << ")\n";
  ss << "B_simple now: over the measurements of the last " << r.window_steps
     << " steps (noise.window_steps); averaged: the EMA over training (noise.ema), which lags a "
        "growing B_simple. 95% Fieller intervals.\n";
  std::snprintf(buf, sizeof buf, "%8s %8s  %-12s %-38s %-32s %s\n", "at_step", "measured",
                "estimator", "B_simple now [95%]", "B_simple averaged [95%]", "B_noise [95%]");
  ss << buf;
  for (const auto& row : r.rows) {
    std::string bn = "-";
    std::string now = estimate_text(row.b_simple, row.ci_low, row.ci_high, row.why_none), avg = "-";
    if (row.estimator == "hessian") {
      bn = estimate_text(row.b_noise, row.ci_low, row.ci_high, row.b_noise_why_none);
      now = estimate_text(row.b_simple, row.same_low, row.same_high) + " (same batches)";
    } else {
      avg = estimate_text(row.b_simple_ema, row.ema_low, row.ema_high, row.ema_why_none);
    }
    std::snprintf(buf, sizeof buf, "%8lld %8lld  %-12s %-38s %-32s %s\n",
                  static_cast<long long>(row.requested), static_cast<long long>(row.measured),
                  row.estimator.c_str(), now.c_str(), avg.c_str(), bn.c_str());
    ss << buf;
  }
  if (!r.past_end_note.empty()) ss << "Note: " << r.past_end_note << "\n";
  ss << r.recommendation << "\n";
  return ss.str();
}

}  // namespace lbt::experiments
