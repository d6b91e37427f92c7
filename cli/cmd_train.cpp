// `lbt train --config FILE [--set key=value ...] [--out DIR]`
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/spread.hpp"
#include "cli/commands.hpp"
#include "cli/run_args.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/run_check.hpp"
#include "experiments/train_run.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/interrupt.hpp"
#include "trainer/target_reading.hpp"

namespace lbt::cli {

namespace {
struct TrainArgs : RunArgs {
  std::vector<std::string> sets;
  bool check = false;
};

// "final val_loss: 0.2853 [0.2742, 0.2964] (95%, ...)": a final mean over the validation
// examples with its interval (trainer::mean_interval); nothing where it was not measured.
void print_mean_interval(const char* name, double mean, double sd, std::int64_t n) {
  const trainer::Interval95 ci = trainer::mean_interval(mean, sd, n);
  if (!std::isfinite(ci.low)) return;
  std::printf(
      "final %s: %.4f [%.4f, %.4f] (95%%, mean +- 1.96 sd/sqrt(n), %lld validation "
      "examples)\n",
      name, mean, ci.low, ci.high, static_cast<long long>(n));
}

void print_r2_interval(double r2, double sd, std::int64_t n) {
  const trainer::Interval95 ci = trainer::r2_interval(r2, sd, n);
  if (!std::isfinite(ci.low)) return;
  std::printf(
      "final val_r2: %.4f [%.4f, %.4f] (95%%, r2 +- 1.96 sd/sqrt(n) by the delta method, %lld "
      "validation examples)\n",
      r2, ci.low, ci.high, static_cast<long long>(n));
}

void print_accuracy_interval(const char* which, double accuracy, std::int64_t n, const char* note) {
  const trainer::Interval95 ci = trainer::accuracy_interval(accuracy, n);
  if (!std::isfinite(ci.low)) return;
  std::printf("%s val_accuracy: %.4f [%.4f, %.4f] (95%%, Wilson, %lld validation examples%s)\n",
              which, accuracy, ci.low, ci.high, static_cast<long long>(n), note);
}

// The run's samples/s is one measurement, evaluations included: its windows give the spread.
void print_throughput(const trainer::TrainOutcome& o, std::int64_t log_every) {
  if (o.window_samples_per_s.size() < 2) return;
  const analysis::Spread s = analysis::spread_of(o.window_samples_per_s);
  std::printf(
      "throughput: %.0f samples/s over the run; per %lld-step window median %.0f [%.0f-%.0f] "
      "(min-max of %zu windows, evaluations and checkpoints included)\n",
      o.samples_per_s, static_cast<long long>(log_every), s.median, s.min, s.max,
      o.window_samples_per_s.size());
}

// The outcome in a few lines (rank 0 only: the others' run_dir is not written).
void report_run(const experiments::RunResult& result) {
  if (const auto* comm = comm::active_communicator(); comm && comm->rank() != 0) return;
  const auto& o = result.outcome;
  // "-": never measured (no evaluation ran).
  auto metric = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return std::isnan(v) ? std::string("-") : std::string(buf);
  };
  // Regression: no accuracy to report, measured or not (a run that diverged at step 1 printed
  // "best val_accuracy: -", 2026-11-29 audit).
  if (result.regression || !std::isnan(o.final_val_mse)) {
    std::printf(
        "status: %s  steps: %lld  final val_mse: %s  final val_r2: %s  final val_loss: %s  "
        "wall: %.3gs  (%.0f samples/s)\n",
        o.status.c_str(), static_cast<long long>(o.steps), metric(o.final_val_mse).c_str(),
        metric(o.final_val_r2).c_str(), metric(o.final_val_loss).c_str(), o.wall_time_s,
        o.samples_per_s);
    print_mean_interval("val_mse", o.final_val_mse, o.final_val_mse_sd, result.val_examples);
    print_r2_interval(o.final_val_r2, o.final_val_r2_sd, result.val_examples);
    print_mean_interval("val_loss", o.final_val_loss, o.final_val_loss_sd, result.val_examples);
  } else {
    std::printf(
        "status: %s  steps: %lld  best val_accuracy: %s  final val_loss: %s  "
        "wall: %.3gs  (%.0f samples/s)\n",
        o.status.c_str(), static_cast<long long>(o.steps), metric(o.best_val_accuracy).c_str(),
        metric(o.final_val_loss).c_str(), o.wall_time_s, o.samples_per_s);
    // The best reading's resolution is its own evaluation's; as the highest of the run's
    // readings it is biased up, as the line says.
    print_accuracy_interval("best", o.best_val_accuracy, result.val_examples,
                            ", the highest of the run's evaluations");
    print_accuracy_interval("final", o.final_val_accuracy, result.val_examples, "");
    print_mean_interval("val_loss", o.final_val_loss, o.final_val_loss_sd, result.val_examples);
  }
  if (o.steps_to_target >= 0) {
    // Shallue's steps-to-result with its bracket: not met at steps_lo, met at steps_to_target.
    std::printf("target reached at step %lld (%lld examples); not met at step %lld\n",
                static_cast<long long>(o.steps_to_target),
                static_cast<long long>(o.examples_to_target), static_cast<long long>(o.steps_lo));
  }
  if (o.diverged_step >= 0 && o.status != "diverged") {  // after the target: recorded beside it
    std::printf("diverged at step %lld, after the target (%s)\n",
                static_cast<long long>(o.diverged_step), o.divergence_reason.c_str());
  }
  print_throughput(o, result.log_every);
  std::printf("run directory: %s\n", result.run_dir.c_str());
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd =
      app.add_subcommand("train", "Train one model from a config; writes a run directory");
  cmd->add_option("--config,-c", args->config_path,
                  "TOML config (presets: experiments/configs/); with --resume RUN_DIR, defaults "
                  "to RUN_DIR/config.toml")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set,-s", args->sets,
                  "Override a config key: --set optimizer.lr=0.1 (repeatable)");
  cmd->add_option("--out,-o", args->out, "Run directory (default: runs/<config>-<timestamp>)")
      ->check(non_empty_path());
  CLI::Option* overwrite =
      cmd->add_flag("--overwrite", args->overwrite, "Replace an existing run directory");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress line");
  cmd->add_flag("--check", args->check,
                "Check everything the run checks before its first step: the config, the data, "
                "the model's layer shapes (no weights) and activations, the optimizer, the "
                "schedule, the run directory (read only) and, for model.device=cuda, that a GPU "
                "is usable; print the resolved config.toml; train nothing");
  cmd->add_option("--resume", args->resume,
                  "RUN_DIR: continue that run from its newest intact checkpoint (bit for bit); "
                  "auto: continue --out's run if it has a checkpoint, else start it (refused where "
                  "every checkpoint is damaged)")
      ->excludes(overwrite);  // --overwrite was ignored beside it
  cmd->footer(config_keys_footer());
  cmd->callback([args] {
    const experiments::RunOptions options = run_options(*args, "train");
    Config config = experiments::load_config(args->config_path, args->sets, notes_stream());
    note_sweep_sets(args->sets, "train");
    if (args->check) {
      // A device's run is checked by its program (lbt-cuda), which can ask for the GPU too.
      continue_on_device(config);
      trainer::install_check_interrupt_handlers();
      // Everything the run checks before its first step (the model's layer shapes, the data,
      // the optimizer, the schedule at the run's budget), with no weights and no training.
      experiments::check_run(config, notes_stream());
      experiments::check_run_directory(
          experiments::run_directory_path(options, config),
          {options.overwrite, options.resume != experiments::Resume::kNo,
           options.resume == experiments::Resume::kRequired},
          config.resolved_toml());
      std::printf("%s", config.resolved_toml().c_str());
      return;
    }
    continue_on_device(config);
    trainer::install_interrupt_handlers();
    const auto result = experiments::run_training(config, options);
    throw_if_interrupted(result, "lbt train --resume " + result.run_dir.string());
    report_run(result);
  });
}

}  // namespace lbt::cli
