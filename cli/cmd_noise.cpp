// `lbt noise --config FILE [--steps N] [--at-steps 0,500,2000] [--out DIR | --resume DIR]`: the
// gradient noise scale during training with 95% intervals, both estimators, B_noise at the
// requested steps, a plot.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "cli/run_args.hpp"
#include "core/config.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/noise_run.hpp"
#include "experiments/plots.hpp"
#include "experiments/run_check.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::cli {

namespace {
struct NoiseArgs : RunArgs {
  std::vector<std::string> sets;
  std::int64_t steps = 0;
  std::vector<std::int64_t> at_steps;
  bool no_plot = false, check = false;
};

// The command that continues an interrupted run with the same report steps.
std::string resume_command(const NoiseArgs& args, const std::filesystem::path& run_dir) {
  std::string command = "lbt noise --resume " + run_dir.string();
  for (std::size_t i = 0; i < args.at_steps.size(); ++i)
    command += (i ? "," : " --at-steps ") + std::to_string(args.at_steps[i]);
  return command;
}

}  // namespace

void add_noise_command(CLI::App& app) {
  auto args = std::make_shared<NoiseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "noise",
      "Gradient noise scale during training: B_simple and the Hessian-weighted B_noise (McCandlish "
      "et al. 2018), with 95% intervals, and the critical batch they suggest");
  cmd->add_option("--config,-c", args->config_path,
                  "TOML config (e.g. experiments/configs/synthetic_regression.toml); with --resume "
                  "RUN_DIR, defaults to RUN_DIR/config.toml")
      ->check(CLI::ExistingFile);
  cmd->add_option("--steps", args->steps, "Train this many steps (default: the config's budget)")
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--at-steps", args->at_steps,
                  "Report B_simple and measure B_noise at these steps: 0,500,2000")
      ->delimiter(',')
      ->check(whole_number<std::int64_t>(0));
  cmd->add_option("--set,-s", args->sets, "Override a config key (repeatable), e.g. noise.every=5");
  cmd->add_option("--out,-o", args->out, "Run directory (default: runs/<config>-<timestamp>)")
      ->check(non_empty_path());
  CLI::Option* overwrite =
      cmd->add_flag("--overwrite", args->overwrite, "Replace an existing run directory");
  cmd->add_option("--resume", args->resume,
                  "RUN_DIR: continue that stopped run from its newest intact checkpoint (bit for "
                  "bit), then report it (give the same --at-steps); auto: continue --out's run if "
                  "it has a checkpoint, else start it")
      ->excludes(overwrite);
  cmd->add_flag("--quiet,-q", args->quiet, "No progress line");
  cmd->add_flag("--no-plot", args->no_plot, "Skip noise.png");
  cmd->add_flag("--check", args->check,
                "Check the config, the data, the model's layer shapes and activations, the "
                "optimizer, the schedule and the run directory (read only) as the run would; "
                "print the resolved config.toml; run nothing");
  cmd->footer(config_keys_footer());
  cmd->callback([args] {
    // lbt noise turns the estimator on, so the file's noise.* settings apply (run_noise refuses
    // a file's noise.enabled = false).
    const experiments::RunOptions run = run_options(*args, "noise");
    Config file = Config::from_file(args->config_path);
    if (!file.has("noise.enabled")) file.set_default("noise.enabled=true");
    Config config = experiments::load_config(std::move(file), args->sets, notes_stream());
    note_sweep_sets(args->sets, "noise");
    // On a GPU (model.device=cuda) lbt noise goes on in lbt-cuda, as lbt train does.
    continue_on_device(config);
    if (args->check) {
      trainer::install_check_interrupt_handlers();
      if (args->steps > 0) config.set("train.steps=" + std::to_string(args->steps));
      experiments::check_noise_config(config, args->at_steps);
      // As run_noise: a warmup past the run is shown, with a note, not refused.
      experiments::check_run(config, notes_stream(), schedules::WarmupPastRun::kNote);
      experiments::check_run_directory(experiments::run_directory_path(run, config),
                                       {run.overwrite, run.resume != experiments::Resume::kNo,
                                        run.resume == experiments::Resume::kRequired},
                                       config.resolved_toml());
      std::printf("%s", config.resolved_toml().c_str());
      return;
    }
    experiments::NoiseRunOptions options;
    options.run = run;
    options.steps = args->steps;
    options.at_steps = args->at_steps;
    trainer::install_interrupt_handlers();  // Ctrl-C left no checkpoint and "running" behind
    auto result = experiments::run_noise(config, options);
    throw_if_interrupted(result.run, resume_command(*args, result.run.run_dir));
    if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK"); r && std::string(r) != "0") return;
    std::printf("%s", experiments::format_noise_report(result).c_str());
    std::printf("run directory: %s (noise.jsonl)\n", result.run.run_dir.c_str());
    std::fflush(stdout);
    if (!args->no_plot) {
      const std::string why =
          experiments::run_plot_script("lbt_plot_noise.py", {result.run.run_dir.string()});
      if (!why.empty())
        std::fprintf(stderr, "warning: plot failed (%s); noise.jsonl is complete\n", why.c_str());
    }
  });
}

}  // namespace lbt::cli
