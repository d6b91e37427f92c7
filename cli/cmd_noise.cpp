// `lbt noise --config FILE [--steps N] [--at-steps 0,500,2000] [--out DIR]`: the gradient noise
// scale during training with 95% intervals, both estimators, B_noise at the requested steps, a
// plot.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/config.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/noise_run.hpp"
#include "experiments/plots.hpp"
#include "experiments/run_check.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::cli {

namespace {
struct NoiseArgs {
  std::string config_path, out;
  std::vector<std::string> sets;
  std::int64_t steps = 0;
  std::vector<std::int64_t> at_steps;
  bool overwrite = false, quiet = false, no_plot = false, check = false;
};
}  // namespace

void add_noise_command(CLI::App& app) {
  auto args = std::make_shared<NoiseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "noise",
      "Gradient noise scale during training: B_simple and the Hessian-weighted B_noise (McCandlish "
      "et al. 2018), with 95% intervals, and the critical batch they suggest");
  cmd->add_option("--config,-c", args->config_path,
                  "TOML config (e.g. experiments/configs/synthetic_regression.toml)")
      ->required()
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
  cmd->add_flag("--overwrite", args->overwrite, "Replace an existing run directory");
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
      experiments::check_run_directory(
          experiments::run_directory_path({args->out, args->overwrite}, config),
          {.overwrite = args->overwrite}, config.resolved_toml());
      std::printf("%s", config.resolved_toml().c_str());
      return;
    }
    experiments::NoiseRunOptions options;
    options.run = {args->out, args->overwrite, !args->quiet};
    options.steps = args->steps;
    options.at_steps = args->at_steps;
    auto result = experiments::run_noise(config, options);
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
