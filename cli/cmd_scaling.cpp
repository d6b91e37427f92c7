// `lbt scaling --config FILE --workers 1,2,4 [--steps N] [--repeats R] [--compare KEY=V1,V2]
// [--out DIR]`: the same config at 1, 2, 4 ... MPI processes (one thread each), the list run R
// times interleaved; scaling.csv (medians with min-max), scaling_runs.csv (every run) and plots
// in DIR; with --compare every value of KEY in the same study, and scaling_compare.csv.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "experiments/child_process.hpp"
#include "experiments/plots.hpp"
#include "experiments/scaling/scaling.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"

namespace lbt::cli {

void add_scaling_command(CLI::App& app) {
  auto o = std::make_shared<experiments::ScalingOptions>();
  auto out = std::make_shared<std::string>("runs/scaling");
  auto mca = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "scaling",
      "Train one config at 1, 2, 4 ... MPI processes; epoch time, throughput, speedup; with "
      "--compare, several values of one key in one study, as ratios");
  cmd->add_option("--config,-c", o->config, "TOML config")->required()->check(CLI::ExistingFile);
  cmd->add_option("--workers,-w", o->workers, "Process counts, ascending: --workers 1,2,4")
      ->required()
      ->delimiter(',')
      ->check(whole_number<int>());
  cmd->add_option("--steps", o->steps, "Optimizer steps per run (throughput window)")
      ->check(whole_number<std::int64_t>())
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats,
                  "Times to run the whole worker list (with --compare, every (variant, workers) "
                  "pair), interleaved, each repeat's order rotated by one; speedup, efficiency "
                  "and variant ratios are taken within each repeat and reported as median "
                  "[min-max]")
      ->check(whole_number<int>())
      ->capture_default_str();
  cmd->add_option("--out,-o", *out,
                  "Study directory (workers-K/repeat-R runs, or VARIANT/workers-K/repeat-R with "
                  "--compare; scaling.csv, scaling_runs.csv, scaling_compare.csv, plots)")
      ->capture_default_str();
  cmd->add_flag("--overwrite", o->overwrite,
                "Replace a finished study in --out (its CSVs, plots and run folders)");
  cmd->add_option("--compare", o->compare,
                  "KEY=V1,V2[,...]: one variant per value (a --set KEY=V on its runs), all in "
                  "this study: every repeat runs every (variant, workers) pair, interleaved and "
                  "rotated. Reports each variant's efficiency (against its own smallest worker "
                  "count) and, per worker count, its samples/s over the first value's (the "
                  "baseline) in the same repeat, median [min-max], in scaling_compare.csv; runs in "
                  "OUT/NAME=VALUE/ (NAME: KEY's last part). A value `lbt train` would refuse at "
                  "any worker count stops the study before its first run. E.g. "
                  "train.overlap_comm=false,true, or train.bucket_mb=1,4,25 with --set "
                  "train.overlap_comm=true");
  cmd->add_option("--set,-s", o->sets, "Config override passed to every run (repeatable)");
  cmd->add_flag("--weak", o->weak, "Weak scaling: global batch = workers x the config's");
  cmd->add_option("--mpirun", o->mpirun, "MPI launcher")->capture_default_str();
  cmd->add_option("--mca", *mca,
                  "OpenMPI MCA setting NAME=VALUE for every run (repeatable), e.g. "
                  "btl_vader_single_copy_mechanism=none");
  cmd->footer(config_keys_footer());
  cmd->callback([o, out, mca] {
    experiments::install_sweep_interrupt_handlers(experiments::InterruptedCommand::kScaling);
    o->interrupt_signal = experiments::sweep_interrupt_signal;
    o->out = *out;
    o->lbt = experiments::self_executable();
    for (const auto& m : *mca) {
      const auto eq = m.find('=');
      if (eq == std::string::npos)
        throw ConfigError("--mca '" + m + "' is not NAME=VALUE",
                          "e.g. --mca btl_vader_single_copy_mechanism=none");
      o->mpirun_args.insert(o->mpirun_args.end(), {"--mca", m.substr(0, eq), m.substr(eq + 1)});
    }
    o->plot_script = experiments::plot_script("lbt_plot_scaling.py");
    experiments::run_scaling(*o);
  });
}

}  // namespace lbt::cli
