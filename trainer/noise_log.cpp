// Noise-estimator glue; see noise_log.hpp.
#include "trainer/noise_log.hpp"

#include <cmath>
#include <cstdio>

#include "core/json_number.hpp"

namespace lbt::trainer {
namespace {

// An interval's two ends, each null where not resolved (NaN) or unbounded (inf).
nlohmann::json interval_ends(double low, double high) {
  return {finite_or_null(low), finite_or_null(high)};
}

}  // namespace

noise::PerExampleSupport per_example_support(const nn::Model& model, const std::string& device) {
  const auto& layers = model.layers();
  if (device != "cpu") {  // the GPU's per-example sums are its MLP's (trainer/cuda/cuda_step.cpp)
    for (const auto& layer : layers) {
      const auto* linear = dynamic_cast<const nn::Linear*>(layer.get());
      if (dynamic_cast<const nn::Conv2d*>(layer.get()) || (linear && !linear->has_bias()))
        return {false, "model.device=" + device +
                           " computes per-example gradient norms for MLPs only (Linear layers "
                           "with biases and ReLUs), not " +
                           layer->describe()};
    }
  }
  for (const auto& layer : layers) {
    if (layer->couples_examples()) {
      return {false,
              "layer " + layer->describe() + " normalises over the batch (examples are coupled)"};
    }
  }
  // every parameter in a Linear or Conv2d layer (the layers with taps)
  std::vector<bool> covered(model.store().segments().size(), false);
  for (const auto& layer : layers) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(layer.get())) {
      covered[linear->weight_segment()] = true;
      if (linear->has_bias()) covered[linear->bias_segment()] = true;
    } else if (const auto* conv = dynamic_cast<const nn::Conv2d*>(layer.get())) {
      covered[conv->weight_segment()] = true;
      if (conv->options().bias) covered[conv->bias_segment()] = true;
    }
  }
  for (std::size_t s = 0; s < covered.size(); ++s) {
    if (!covered[s]) {
      return {false, "parameter '" + model.store().segments()[s].name +
                         "' is not in a Linear or Conv2d layer"};
    }
  }
  return {};
}

noise::ExampleTaps example_taps(const nn::Model& model, const float* x, TapBuffers& taps) {
  taps.linear.clear();
  taps.conv.clear();
  const auto& layers = model.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(layers[i].get())) {
      taps.linear.push_back(
          {model.layer_input(i, x), model.layer_output_grad(i), linear->in_features(),
           linear->out_features(), linear->weight_segment(),
           linear->has_bias() ? static_cast<std::ptrdiff_t>(linear->bias_segment()) : -1});
    } else if (const auto* conv = dynamic_cast<const nn::Conv2d*>(layers[i].get())) {
      const nn::Shape3 in = conv->in_shape(), out = conv->out_shape();
      const nn::Conv2dOptions& o = conv->options();
      taps.conv.push_back({model.layer_input(i, x), model.layer_output_grad(i), in.c, in.h, in.w,
                           out.c, out.h, out.w, o.kernel, o.stride, o.padding,
                           conv->weight_segment(),
                           o.bias ? static_cast<std::ptrdiff_t>(conv->bias_segment()) : -1});
    }
  }
  return {taps.linear, taps.conv};
}

nlohmann::json noise_json(const noise::NoiseReport& report, const noise::EstimatorReport& e,
                          std::int64_t window_steps) {
  // "now": the window's lines at this step; "ema": averaged over training. A value not
  // resolved (|G|^2 within noise of 0, or too few measurements) is null, an unbounded end too;
  // the per-step G_sq_step and trace_sigma_step are single unbiased draws, with no interval.
  const noise::NoiseScale& now = e.now;
  const noise::NoiseScale& ema = e.smoothed;
  nlohmann::json j = {
      {"step", report.step},
      {"estimator", e.name},
      {"b_small", e.b_small},
      {"B_big", e.B_big},
      {"window_steps", window_steps},
      {"b_simple", finite_or_null(now.b_simple)},
      {"b_simple_ci95", interval_ends(now.ci_low, now.ci_high)},
      {"resolved", now.resolved},
      {"G_sq", finite_or_null(now.G_sq)},
      {"G_sq_ci95", interval_ends(now.G_sq_low, now.G_sq_high)},
      {"trace_sigma", finite_or_null(now.trace_sigma)},
      {"trace_sigma_ci95", interval_ends(now.trace_sigma_low, now.trace_sigma_high)},
      {"window_samples", now.samples},
      {"b_simple_ema", finite_or_null(ema.b_simple)},
      {"b_simple_ema_ci95", interval_ends(ema.ci_low, ema.ci_high)},
      {"G_sq_ema", finite_or_null(ema.G_sq)},
      {"G_sq_ema_ci95", interval_ends(ema.G_sq_low, ema.G_sq_high)},
      {"trace_sigma_ema", finite_or_null(ema.trace_sigma)},
      {"trace_sigma_ema_ci95", interval_ends(ema.trace_sigma_low, ema.trace_sigma_high)},
      {"n_eff_ema", ema.effective_samples},
      {"G_sq_step", finite_or_null(e.step.G_sq)},
      {"trace_sigma_step", finite_or_null(e.step.trace_sigma)},
      {"samples", ema.samples}};
  if (!e.segments.empty()) {
    nlohmann::json segs = nlohmann::json::object();
    for (std::size_t i = 0; i < e.segments.size(); ++i) {
      const auto& g = e.segments[i];
      segs[report.segment_names[i]] = {
          {"b_simple", finite_or_null(g.b_simple)},
          {"ci95", interval_ends(g.ci_low, g.ci_high)},
          {"G_sq", finite_or_null(g.G_sq)},
          {"G_sq_ci95", interval_ends(g.G_sq_low, g.G_sq_high)},
          {"trace_sigma", finite_or_null(g.trace_sigma)},
          {"trace_sigma_ci95", interval_ends(g.trace_sigma_low, g.trace_sigma_high)}};
    }
    j["segments"] = std::move(segs);
  }
  return j;
}

void log_noise_note(const noise::OnlineEstimator& estimator, RunDirectory* run_dir, bool rank0) {
  if (!estimator.options().enabled || !rank0) return;
  const noise::NoiseMethod& m = estimator.method();
  if (estimator.options().announce) {  // lbt noise prints both in its report, after the run
    if (!estimator.options().layout_note.empty())
      std::fprintf(stderr, "noise: %s\n", estimator.options().layout_note.c_str());
    std::fprintf(stderr, "noise: method %s (%s)\n", m.name.c_str(), m.reason.c_str());
  }
  if (!estimator.note().empty()) std::fprintf(stderr, "%s\n", estimator.note().c_str());
  if (!run_dir) return;
  nlohmann::json line = {{"method", m.name}, {"reason", m.reason}};
  if (!estimator.options().layout_note.empty()) line["layout"] = estimator.options().layout_note;
  if (!estimator.note().empty()) line["note"] = estimator.note();
  run_dir->append_noise(line);
}

void log_noise(const noise::NoiseReport& report, std::int64_t window_steps, RunDirectory* run_dir) {
  if (!run_dir) return;
  for (const auto& e : report.estimators) {
    if (e.smoothed.samples > 0) run_dir->append_noise(noise_json(report, e, window_steps));
  }
}

}  // namespace lbt::trainer
