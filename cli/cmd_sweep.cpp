// `lbt sweep --config FILE --batch-sizes 16,32,... [--target ...] [--lr-trials N] [--jobs J]
//  [--out DIR] [--set k=v ...] [--launcher local|slurm] [--submit] [--trial-index I]`
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_interrupt.hpp"
#include "experiments/sweep_plan.hpp"

namespace lbt::cli {

namespace {
struct SweepArgs {
  std::string config_path, target, out, launcher = "local";
  std::vector<std::int64_t> batch_sizes;
  std::vector<std::string> sets;
  int lr_trials = 0, jobs = 1, trial_index = -1;
  std::string trial_name, exec_command;
  bool submit = false, retry_failed = false, extend = false, collect = false, no_plots = false,
       quiet = false;
  bool check = false;
};
}  // namespace

void add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Batch-size sweep to a target: per batch size an LR search, steps-to-result, "
      "sweep.csv / best.csv / fit.json / plots (resumable)");
  cmd->add_option("--config,-c", a->config_path,
                  "TOML config with a [sweep] section "
                  "(presets: experiments/configs/*_sweep.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch-sizes,-b", a->batch_sizes,
                  "global batch sizes, e.g. 16,32,64 (default: sweep.batch_sizes)")
      ->delimiter(',');
  cmd->add_option("--target,-t", a->target,
                  "e.g. \"val_accuracy>=0.85\" (default: the config's train.target)");
  cmd->add_option("--lr-trials", a->lr_trials,
                  "LR trials per batch size (default: sweep.lr_trials)");
  cmd->add_option("--jobs,-j", a->jobs, "concurrent trials; each gets max(1, cores / jobs) threads")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out,-o", a->out,
                  "sweep directory (default: runs/sweep-<config stem>); "
                  "rerunning with the same one resumes");
  cmd->add_option("--set,-s", a->sets,
                  "override a key: sweep.* for the sweep, others for every trial");
  cmd->add_option("--launcher", a->launcher,
                  "local (child processes) | slurm (writes sweep.sbatch)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_flag("--submit", a->submit, "slurm: sbatch the written script");
  cmd->add_option("--trial-index", a->trial_index,
                  "run only trial I of the plan as it stands (sweep.csv's order)");
  cmd->add_option("--exec", a->exec_command,
                  "run this program as each trial instead of lbt train: placeholders {batch_size} "
                  "{lr} {seed} {run_dir} {max_steps} {eval_every} {section.key}; it appends "
                  "{\"step\": S, \"val_loss\": V} lines to {run_dir}/eval.jsonl (README, "
                  "\"Sweeping any program\")");
  cmd->add_option("--trial", a->trial_name,
                  "run only the trial of this name, e.g. 128_3 (a SLURM array task)");
  cmd->add_flag("--retry-failed", a->retry_failed, "rerun trials whose status is failed");
  cmd->add_flag("--extend", a->extend,
                "rerun of a sweep directory: add the trials of new batch sizes (a rerun whose "
                "settings changed otherwise is refused, naming what differs)");
  cmd->add_flag("--collect", a->collect, "run nothing: rebuild the CSVs, fit.json and plots");
  cmd->add_flag("--no-plots", a->no_plots, "skip notebooks/lbt_sweep_plots.py");
  cmd->add_flag("--quiet,-q", a->quiet, "no progress lines");
  cmd->add_flag("--check", a->check,
                "validate the config and every trial's (schedule against its budget); run nothing");
  cmd->footer(config_keys_footer());
  cmd->callback([a] {
    experiments::SweepOptions o;
    o.config_path = a->config_path;
    o.batch_sizes = a->batch_sizes;
    o.target = a->target;
    o.lr_trials = a->lr_trials;
    o.jobs = a->jobs;
    o.out = a->out;
    o.sets = a->sets;
    o.launcher = a->launcher;
    o.submit = a->submit;
    o.trial_index = a->trial_index;
    o.trial_name = a->trial_name;
    o.exec_command = a->exec_command;
    o.retry_failed = a->retry_failed;
    o.extend = a->extend;
    o.collect_only = a->collect;
    o.plots = !a->no_plots;
    o.progress = !a->quiet;
    o.check_only = a->check;
    experiments::install_sweep_interrupt_handlers();
    const auto r = experiments::run_sweep(o);
    if (r.interrupt_signal != 0) {
      throw Interrupted(r.interrupt_signal,
                        std::string("sweep interrupted by ") +
                            (r.interrupt_signal == SIGINT ? "SIGINT" : "SIGTERM") +
                            ": its running trials saved a checkpoint (status interrupted); "
                            "sweep.csv and best.csv in " +
                            r.dir.string() + " hold the trials finished so far",
                        "continue it with: " + experiments::sweep_resume_command(o, r.dir) +
                            " (finished trials are kept, interrupted ones continue bit for bit)");
    }
    if (a->check) {
      std::printf("sweep config valid: %d trials, each trial's config and schedule checked\n",
                  r.trials);
      return;
    }
    if (a->launcher == "slurm" && a->trial_index < 0 && a->trial_name.empty() && !a->collect)
      return;
    std::printf("sweep: %d trials (%d run now, %d kept), %d reached the target, %d failed\n",
                r.trials, r.ran, r.skipped, r.reached, r.failed);
    if (!r.fit_note.empty()) std::printf("fit: %s\n", r.fit_note.c_str());
    std::printf("sweep directory: %s\n", r.dir.c_str());
    if (!r.failed_trials.empty()) {
      // Diverged and unreached trials are outcomes; a crashed trial is not, and a script that
      // checks the exit code must not take the sweep for complete.
      std::string list;
      for (const auto& f : r.failed_trials) list += "\n  " + f;
      throw PartialFailure(std::to_string(r.failed_trials.size()) + " of " +
                               std::to_string(r.trials) + " trials failed (crashed):" + list,
                           "see each trial's train.log; fix the cause and rerun with "
                           "--retry-failed (finished trials are kept)");
    }
  });
}

}  // namespace lbt::cli
