// Noise-estimator glue; see noise_log.hpp.
#include "trainer/noise_log.hpp"

#include <cmath>
#include <cstdio>

namespace lbt::trainer {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

std::span<const noise::LinearTap> linear_taps(const nn::Model& model, const float* x,
                                              std::vector<noise::LinearTap>& taps) {
  taps.clear();
  const auto& layers = model.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (const auto* linear = dynamic_cast<const nn::Linear*>(layers[i].get())) {
      taps.push_back({model.layer_input(i, x), model.layer_output_grad(i), linear->in_features(),
                      linear->out_features(), linear->weight_segment(), linear->bias_segment()});
    }
  }
  return taps;
}

nlohmann::json noise_json(const noise::NoiseReport& report, const noise::EstimatorReport& e) {
  const noise::NoiseScale& s = e.smoothed;
  nlohmann::json j = {{"step", report.step},
                      {"estimator", e.name},
                      {"b_small", e.b_small},
                      {"B_big", e.B_big},
                      {"G_sq", number(s.G_sq)},
                      {"trace_sigma", number(s.trace_sigma)},
                      {"G_sq_step", number(e.step.G_sq)},
                      {"trace_sigma_step", number(e.step.trace_sigma)},
                      {"b_simple", number(s.b_simple)},
                      {"b_simple_ci95", {number(s.ci_low), number(s.ci_high)}},
                      {"n_eff", s.effective_samples},
                      {"samples", s.samples}};
  if (!e.segments.empty()) {
    nlohmann::json segs = nlohmann::json::object();
    for (std::size_t i = 0; i < e.segments.size(); ++i) {
      const auto& g = e.segments[i];
      segs[report.segment_names[i]] = {{"b_simple", number(g.b_simple)},
                                       {"ci95", {number(g.ci_low), number(g.ci_high)}},
                                       {"G_sq", number(g.G_sq)},
                                       {"trace_sigma", number(g.trace_sigma)}};
    }
    j["segments"] = std::move(segs);
  }
  return j;
}

void log_noise_note(const noise::OnlineEstimator& estimator, RunDirectory* run_dir, bool rank0) {
  if (estimator.note().empty() || !rank0) return;
  std::fprintf(stderr, "%s\n", estimator.note().c_str());
  if (run_dir) run_dir->append_noise({{"note", estimator.note()}});
}

void log_noise(const noise::NoiseReport& report, RunDirectory* run_dir) {
  if (!run_dir) return;
  for (const auto& e : report.estimators) {
    if (e.smoothed.samples > 0) run_dir->append_noise(noise_json(report, e));
  }
}

}  // namespace lbt::trainer
