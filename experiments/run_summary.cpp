// summary.json; see run_summary.hpp.
#include "experiments/run_summary.hpp"

#include <cmath>

#include "analysis/spread.hpp"
#include "core/kernel_identity.hpp"
#include "experiments/json_file.hpp"
#include "experiments/trial_readings.hpp"
#include "trainer/batch_steps.hpp"

namespace lbt::experiments {
namespace {

// The throughput's spread over metrics.jsonl's windows; null below two (one has no spread).
nlohmann::json window_spread(const std::vector<double>& samples_per_s) {
  if (samples_per_s.size() < 2) return nullptr;
  const analysis::Spread s = analysis::spread_of(samples_per_s);
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"windows", samples_per_s.size()}};
}

nlohmann::json summary_json(const trainer::TrainConfig& cfg, const trainer::TrainOutcome& o,
                            const std::string& model, const std::string& optimizer, int world_size,
                            std::int64_t steps_per_epoch) {
  nlohmann::json s = {
      {"status", o.status},
      {"steps", o.steps},
      {"total_steps", o.total_steps},
      {"examples", o.examples >= 0 ? o.examples : o.steps * cfg.global_batch},
      {"global_batch", cfg.global_batch},
      {"micro_batch", cfg.micro_batch},
      {"accum_steps", cfg.accum_steps},
      {"world_size", world_size},
      {"steps_per_epoch", steps_per_epoch},
      {"target", cfg.target.text()},
      {"steps_to_target",
       o.steps_to_target >= 0 ? nlohmann::json(o.steps_to_target) : nlohmann::json()},
      {"examples_to_target",
       o.examples_to_target >= 0 ? nlohmann::json(o.examples_to_target) : nlohmann::json()},
      // The bracket of steps_to_target: not met at steps_lo (an evaluated step, 0: the start),
      // met at steps_hi = steps_to_target; null until the target is met.
      {"steps_lo", o.steps_to_target >= 0 ? nlohmann::json(o.steps_lo) : nlohmann::json()},
      {"steps_hi", o.steps_to_target >= 0 ? nlohmann::json(o.steps_to_target) : nlohmann::json()},
      {"target_resolution", cfg.target_resolution},
      {"refinement_evals", o.refinement_evals},
      {"best_val_accuracy", null_if_nan(o.best_val_accuracy)},
      {"best_val_loss", null_if_nan(o.best_val_loss)},
      {"final_val_accuracy", null_if_nan(o.final_val_accuracy)},
      {"final_val_loss", null_if_nan(o.final_val_loss)},
      // regression (null for classification): mean squared error and R^2, as sklearn's
      {"best_val_mse", null_if_nan(o.best_val_mse)},
      {"best_val_r2", null_if_nan(o.best_val_r2)},
      {"final_val_mse", null_if_nan(o.final_val_mse)},
      {"final_val_r2", null_if_nan(o.final_val_r2)},
      {"last_loss", o.status == "running" && o.steps == 0 ? nlohmann::json()
                    : std::isfinite(o.last_loss)          ? nlohmann::json(o.last_loss)
                                                 : nlohmann::json(std::to_string(o.last_loss))},
      {"wall_time_s", o.wall_time_s},
      {"samples_per_s", o.samples_per_s},
      {"samples_per_s_windows", window_spread(o.window_samples_per_s)},
      {"model", model},
      {"optimizer", optimizer},
  };
  if (o.skipped_steps > 0) s["skipped_steps"] = o.skipped_steps;
  if (o.diverged_step >= 0) {  // diverged, or after reaching the target
    s["diverged_step"] = o.diverged_step;
    s["last_finite_loss"] = null_if_nan(o.last_finite_loss);
    s["divergence_reason"] = o.divergence_reason;
  }
  // Adaptive or stepped batch: global_batch above is the first steps', global_batch_last the
  // last step's (null before one); examples and examples_to_target are sums of the batches used.
  if (cfg.adaptive.enabled) {
    s["global_batch_last"] =
        o.last_global_batch > 0 ? nlohmann::json(o.last_global_batch) : nlohmann::json();
    s["batch_schedule"] = cfg.adaptive.follows_noise() ? "adaptive" : "steps";
    s["batch_min"] = cfg.adaptive.batch_min;
    s["batch_max"] = cfg.adaptive.batch_max;
    if (!cfg.adaptive.follows_noise())
      s["batch_steps"] = trainer::format_batch_steps(cfg.adaptive.steps);
  }
  return s;
}

}  // namespace

nlohmann::json SummaryParts::of(const trainer::TrainOutcome& o) const {
  nlohmann::json s = summary_json(cfg, o, model, optimizer, world_size, steps_per_epoch);
  s["threads"] = threads;
  s["kernels"] = kernel_identity().text;  // which sums made these numbers (kernel_identity.hpp)
  // The final accuracy's resolution: the validation split's size, and the 95% Wilson
  // interval it gives (null where no accuracy was measured).
  s["val_examples"] = val_examples;
  const auto json = [](trainer::Interval95 ci) { return interval_or_null(ci.low, ci.high); };
  s["final_val_accuracy_ci95"] =
      json(trainer::accuracy_interval(o.final_val_accuracy, val_examples));
  // The final loss's and mse's: mean +- 1.96 sd / sqrt(n) over the split's examples.
  s["final_val_loss_ci95"] =
      json(trainer::mean_interval(o.final_val_loss, o.final_val_loss_sd, val_examples));
  s["final_val_mse_ci95"] =
      json(trainer::mean_interval(o.final_val_mse, o.final_val_mse_sd, val_examples));
  // R^2's: r2 +- 1.96 sd / sqrt(n), sd its linearisation's over the examples (the delta method
  // for a ratio of means), the upper end held at 1.
  s["final_val_r2_ci95"] =
      json(trainer::r2_interval(o.final_val_r2, o.final_val_r2_sd, val_examples));
  // The best values' the same way, each from its own evaluation: the resolution of that one
  // reading (the best of several noisy readings is biased toward better).
  s["best_val_accuracy_ci95"] = json(trainer::accuracy_interval(o.best_val_accuracy, val_examples));
  s["best_val_loss_ci95"] =
      json(trainer::mean_interval(o.best_val_loss, o.best_val_loss_sd, val_examples));
  s["best_val_mse_ci95"] =
      json(trainer::mean_interval(o.best_val_mse, o.best_val_mse_sd, val_examples));
  s["best_val_r2_ci95"] = json(trainer::r2_interval(o.best_val_r2, o.best_val_r2_sd, val_examples));
  add_readings(s, run_dir / "eval.jsonl", cfg, o);  // steps-to-target under each reading
  return s;
}

}  // namespace lbt::experiments
