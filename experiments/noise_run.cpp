// run_noise; see noise_run.hpp.
#include "experiments/noise_run.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "noise/hessian_noise.hpp"
#include "noise/noise_keys.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/nn/loss.hpp"
#include "trainer/noise_log.hpp"
#include "trainer/run_config.hpp"
#include "trainer/train_keys.hpp"

namespace lbt::experiments {
namespace {

struct HessianOptions {
  std::int64_t small_batches = 16;  // K small-batch gradients for tr(H Sigma)
  std::int64_t examples = 2048;     // examples behind each gradient of the HVP oracle
};

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

// Mean gradient over rows `rows` of `data` into `out`, in chunks of `chunk` examples.
void mean_gradient(nn::Model& model, const data::Dataset& data,
                   const std::vector<std::int64_t>& rows, std::int64_t chunk,
                   std::span<float> out) {
  ParameterStore& store = model.store();
  std::vector<float> x(static_cast<std::size_t>(chunk * data.dim)), targets;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(chunk));
  targets.resize(static_cast<std::size_t>(chunk * std::max<std::int64_t>(data.target_dim, 1)));
  const float scale = 1.0f / static_cast<float>(rows.size());
  for (std::size_t start = 0; start < rows.size(); start += chunk) {
    const std::int64_t b = std::min<std::int64_t>(chunk, rows.size() - start);
    for (std::int64_t j = 0; j < b; ++j) {
      data.copy_example(rows[start + j], j, x.data(), labels.data(), targets.data());
    }
    const float* out_act = model.forward(x.data(), b, true);
    if (data.is_classification()) {
      nn::softmax_cross_entropy(out_act, labels.data(), b, model.output_dim(), model.output_grad(),
                                scale, nullptr);
    } else {
      nn::half_squared_error(out_act, targets.data(), b, model.output_dim(), model.output_grad(),
                             scale);
    }
    model.backward(x.data(), b, /*accumulate=*/start > 0);
  }
  std::copy(store.grads().begin(), store.grads().end(), out.begin());
}

// Hessian-weighted B_noise at the current parameters (noise/hessian_noise.hpp), written to
// noise.jsonl as estimator "hessian". Parameters are restored; gradients are scratch here.
void probe_b_noise(std::int64_t step, ProbeContext& ctx, const HessianOptions& h) {
  nn::Model& model = ctx.model;
  const data::Dataset& data = ctx.data.train;
  const std::int64_t b = ctx.config.micro_batch;
  const std::size_t n = model.store().num_params();
  std::mt19937_64 rng(ctx.config.seed * 1000003 + static_cast<std::uint64_t>(step));
  std::uniform_int_distribution<std::int64_t> pick(0, data.n - 1);
  auto draw = [&](std::int64_t count) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    for (auto& r : rows) r = pick(rng);
    return rows;
  };
  // Train-mode forwards update BatchNorm's running statistics: the probe must leave no trace.
  std::vector<std::vector<float>> saved_buffers;
  for (std::span<float> buf : model.buffers()) saved_buffers.emplace_back(buf.begin(), buf.end());
  std::vector<std::vector<float>> small(static_cast<std::size_t>(h.small_batches),
                                        std::vector<float>(n));
  for (auto& g : small) mean_gradient(model, data, draw(b), b, g);
  const std::vector<float> theta(model.store().params().begin(), model.store().params().end());
  const std::vector<std::int64_t> big_rows = draw(std::min(h.examples, data.n));
  noise::GradientFn grad = [&](std::span<const float> params, std::span<float> out) {
    std::copy(params.begin(), params.end(), model.store().params().begin());
    mean_gradient(model, data, big_rows, std::max<std::int64_t>(b, 256), out);
  };
  const noise::HessianNoise r =
      noise::hessian_noise_scale(grad, theta, small, static_cast<double>(b));
  std::copy(theta.begin(), theta.end(), model.store().params().begin());
  model.store().zero_grads();
  const auto buffers = model.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i)
    std::copy(saved_buffers[i].begin(), saved_buffers[i].end(), buffers[i].begin());
  // B_simple from the same small batches, for comparison: tr(Sigma) and |G|^2 as in hessian_noise
  std::vector<double> mean(n, 0.0);
  for (const auto& g : small)
    for (std::size_t i = 0; i < n; ++i) mean[i] += g[i] / small.size();
  double spread = 0.0, mean_sq = 0.0;
  for (const auto& g : small)
    for (std::size_t i = 0; i < n; ++i) spread += (g[i] - mean[i]) * (g[i] - mean[i]);
  for (double m : mean) mean_sq += m * m;
  const double tr = b * spread / (small.size() - 1.0);
  const double G_sq = mean_sq - tr / (small.size() * static_cast<double>(b));
  if (ctx.run_dir) {
    ctx.run_dir->append_noise(
        {{"step", step},
         {"estimator", "hessian"},
         {"b_noise", finite_or_null(r.b_noise)},
         {"b_noise_ci95", {finite_or_null(r.ci_low), finite_or_null(r.ci_high)}},
         {"resolved", r.resolved},
         {"tr_H_sigma", r.tr_H_sigma},
         {"gHg", r.gHg},
         {"b_simple_same_batches", tr / G_sq},
         {"small_batches", small.size()},
         {"b_small", b},
         {"hvp_examples", big_rows.size()}});
  }
}

// lbt noise's own keys (noise.hessian.*), after turning the estimator on unless it is set.
HessianOptions read_hessian_options(Config& config, bool& hessian) {
  if (!config.has("noise.enabled")) config.set("noise.enabled=true");
  HessianOptions h;
  const auto& keys = noise::noise_keys();
  h.small_batches = config.get_int(Schema::in(keys, "noise.hessian.small_batches"));
  h.examples = config.get_int(Schema::in(keys, "noise.hessian.examples"));
  hessian = config.get_bool(Schema::in(keys, "noise.hessian.enabled"));
  if (h.small_batches < 3)  // the jackknife interval leaves one out and needs a pair left
    config.fail("noise.hessian.small_batches", ">= 3", std::to_string(h.small_batches));
  if (h.examples < 1) config.fail("noise.hessian.examples", ">= 1", std::to_string(h.examples));
  return h;
}

// One process, a model whose per-example norms are not exact (BatchNorm couples examples) and
// no layout in the config: the two-batch form needs small batches, so split the global batch
// into micro-batches (4 of >= 32 examples where it divides, else 2). BatchNorm then normalises
// over each micro-batch, which the note says. Returns the note ("" when nothing changed).
std::string choose_noise_layout(Config& config) {
  if (config.has("train.micro_batch") || config.has("train.accum_steps")) return "";
  Config probe = config;  // resolving records what it read; the run resolves again
  const std::string backend = probe.get_string(Schema::in(trainer::train_keys(), "comm.backend"));
  const int world = comm::process_communicator({backend}).size();
  const trainer::RunConfig run = trainer::resolve_run_config(probe, world);
  if (!run.noise.enabled || !run.noise.two_batch || world >= 2) return "";
  auto model = nn::Model::from_spec(run.train.model_spec, run.train.init);
  auto rng = make_rng(run.train.seed, RngStream::kInit);
  model->build(rng);
  const noise::PerExampleSupport support = trainer::per_example_support(*model);
  if (support.exact) return "";
  const std::int64_t B = run.train.global_batch;
  const std::int64_t accum = B % 4 == 0 && B / 4 >= 32 ? 4 : B % 2 == 0 ? 2 : 0;
  if (accum == 0) return "";  // choose_method then names the fix
  config.set("train.accum_steps=" + std::to_string(accum));
  return "per-example norms are not exact for " + run.train.model_spec + " (" + support.reason +
         "), so lbt noise splits the global batch of " + std::to_string(B) + " into " +
         std::to_string(accum) + " micro-batches of " + std::to_string(B / accum) +
         " (train.accum_steps = " + std::to_string(accum) +
         ") for the two-batch estimator; BatchNorm normalises over each micro-batch. Set "
         "train.accum_steps or train.micro_batch to choose another layout.";
}

}  // namespace

void check_noise_config(Config& config) {
  bool hessian = false;
  read_hessian_options(config, hessian);
  choose_noise_layout(config);
  trainer::resolve_run_config(config, 1);
}

NoiseRunResult run_noise(Config& config, const NoiseRunOptions& options) {
  if (options.steps > 0) config.set("train.steps=" + std::to_string(options.steps));
  bool hessian = false;
  const HessianOptions h = read_hessian_options(config, hessian);

  NoiseRunOptions o = options;
  o.run.noise_layout_note = choose_noise_layout(config);
  std::vector<std::int64_t> at = o.at_steps;
  if (hessian && !at.empty()) {
    o.run.probe = [at, h](std::int64_t step, ProbeContext& ctx) {
      if (std::find(at.begin(), at.end(), step) != at.end()) probe_b_noise(step, ctx, h);
    };
  }
  NoiseRunResult result;
  result.run = run_training(config, o.run);

  // ---- read noise.jsonl back: the last measurement at or before each requested step ----
  std::ifstream in(result.run.run_dir / "noise.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("method")) {
      result.method = j["method"].get<std::string>();
      result.method_reason = j.value("reason", std::string());
      result.layout_note = j.value("layout", std::string());
    }
    if (j.contains("estimator")) lines.push_back(std::move(j));
  }
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
  if (at.empty() && result.run.outcome.steps > 0) at.push_back(result.run.outcome.steps - 1);
  for (std::int64_t s : at) {
    for (const char* name : {"two_batch", "per_example", "hessian"}) {
      const nlohmann::json* best = nullptr;
      for (const auto& j : lines) {
        if (j["estimator"] == name && j["step"].get<std::int64_t>() <= s) best = &j;
      }
      if (!best) continue;
      NoiseAtStep row{s, (*best)["step"].get<std::int64_t>(), name};
      if (std::string(name) == "hessian") {
        row.b_noise = num((*best)["b_noise"]);
        row.ci_low = num((*best)["b_noise_ci95"][0]);
        row.ci_high = num((*best)["b_noise_ci95"][1]);
        row.b_simple = num((*best)["b_simple_same_batches"]);
      } else {
        row.b_simple = num((*best)["b_simple"]);
        row.ci_low = num((*best)["b_simple_ci95"][0]);
        row.ci_high = num((*best)["b_simple_ci95"][1]);
        row.b_simple_ema = num((*best)["b_simple_ema"]);
        row.ema_low = num((*best)["b_simple_ema_ci95"][0]);
        row.ema_high = num((*best)["b_simple_ema_ci95"][1]);
        result.window_steps = (*best).value("window_steps", std::int64_t{0});
      }
      result.rows.push_back(row);
    }
  }
  // headline: the last two_batch line's "now" value, else per_example's
  for (const char* name : {"per_example", "two_batch"}) {
    for (const auto& j : lines) {
      if (j["estimator"] == name) {
        result.final_b_simple = num(j["b_simple"]);
        result.final_low = num(j["b_simple_ci95"][0]);
        result.final_high = num(j["b_simple_ci95"][1]);
      }
    }
  }
  char buf[640];
  if (std::isfinite(result.final_b_simple) && std::isfinite(result.final_high)) {
    std::snprintf(
        buf, sizeof buf,
        "Recommendation: the critical batch size is about B_noise (McCandlish et al. "
        "2018), and B_simple now (over the last %lld steps) ~ %.0f [%.0f, %.0f] at the "
        "end of this run is its proxy, so global batches up to about %.0f should cut "
        "steps almost in proportion, while larger ones mostly spend more examples for "
        "little gain (B_simple grows as the loss falls, so re-measure later in training).",
        static_cast<long long>(result.window_steps), result.final_b_simple, result.final_low,
        result.final_high, result.final_b_simple);
  } else {
    std::snprintf(buf, sizeof buf,
                  "Recommendation: none yet. B_simple is not resolved at the end of this run: "
                  "|G|^2 is within noise of 0 over the last %lld steps, so the noise scale is at "
                  "least %.0f and unbounded above. Run longer, measure more often (noise.every), "
                  "widen noise.window_steps, or raise the large batch.",
                  static_cast<long long>(result.window_steps),
                  std::isfinite(result.final_low) ? result.final_low : 0.0);
  }
  result.recommendation = buf;
  return result;
}

namespace {

// "12.3 [10.1, 15.2]", "not resolved (>= 40)", or "-" before two measurements.
std::string estimate_text(double value, double low, double high) {
  char buf[96];
  if (std::isfinite(value) && std::isfinite(high)) {
    std::snprintf(buf, sizeof buf, "%.4g [%.4g, %.4g]", value, low, high);
  } else if (std::isfinite(low)) {
    std::snprintf(buf, sizeof buf, "not resolved (>= %.4g)", low);
  } else {
    return "-";
  }
  return buf;
}

}  // namespace

std::string format_noise_report(const NoiseRunResult& r) {
  std::ostringstream ss;
  char buf[256];
  if (!r.layout_note.empty()) ss << "Layout: " << r.layout_note << "\n";
  if (!r.method.empty()) ss << "Method: " << r.method << " (" << r.method_reason << ")\n";
  ss << "B_simple now: over the measurements of the last " << r.window_steps
     << " steps (noise.window_steps); averaged: the EMA over training (noise.ema), which lags a "
        "growing B_simple. 95% Fieller intervals.\n";
  std::snprintf(buf, sizeof buf, "%8s %8s  %-12s %-32s %-32s %s\n", "at_step", "measured",
                "estimator", "B_simple now [95%]", "B_simple averaged [95%]", "B_noise [95%]");
  ss << buf;
  for (const auto& row : r.rows) {
    std::string bn = "-";
    std::string now = estimate_text(row.b_simple, row.ci_low, row.ci_high), avg = "-";
    if (row.estimator == "hessian") {
      bn = estimate_text(row.b_noise, row.ci_low, row.ci_high);
      char same[48];
      std::snprintf(same, sizeof same, "%.4g (same batches)", row.b_simple);
      now = same;
    } else {
      avg = estimate_text(row.b_simple_ema, row.ema_low, row.ema_high);
    }
    std::snprintf(buf, sizeof buf, "%8lld %8lld  %-12s %-32s %-32s %s\n",
                  static_cast<long long>(row.requested), static_cast<long long>(row.measured),
                  row.estimator.c_str(), now.c_str(), avg.c_str(), bn.c_str());
    ss << buf;
  }
  ss << r.recommendation << "\n";
  return ss.str();
}

}  // namespace lbt::experiments
