// `lbt sweep --config FILE --batch-sizes 16,32,... [--target ...] [--lr-trials N] [--jobs J]
//  [--out DIR] [--set k=v ...] [--launcher local|slurm] [--submit] [--trial-index I]`
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/sweep/sweep.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::cli {

namespace {
// The sweep's options as the flags set them: most bind to experiments::SweepOptions directly;
// paths go through strings, and the negative flags are turned round in resolved().
struct SweepArgs {
  experiments::SweepOptions options;
  std::string config_path, out;
  bool no_plots = false, quiet = false;

  experiments::SweepOptions resolved() const {
    experiments::SweepOptions o = options;
    o.config_path = config_path;
    o.out = out;
    o.plots = !no_plots;
    o.progress = !quiet;
    return o;
  }
};

void add_sweep_options(CLI::App* cmd, SweepArgs& a) {
  experiments::SweepOptions& o = a.options;
  cmd->add_option("--config,-c", a.config_path,
                  "TOML config with a [sweep] section "
                  "(presets: experiments/configs/*_sweep.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch-sizes,-b", o.batch_sizes,
                  "global batch sizes, e.g. 16,32,64 (default: sweep.batch_sizes)")
      ->delimiter(',')
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--target,-t", o.target,
                  "e.g. \"val_accuracy>=0.85\" (default: the config's train.target)");
  cmd->add_option("--lr-trials", o.lr_trials, "LR trials per batch size (default: sweep.lr_trials)")
      ->check(whole_number<int>());
  cmd->add_option("--jobs,-j", o.jobs,
                  "concurrent trials; each gets max(1, cores / jobs) threads (default 1); with "
                  "--launcher slurm, the array's limit (%J: J tasks at once)")
      ->check(whole_number<int>());
  cmd->add_option("--out,-o", a.out,
                  "sweep directory (default: runs/sweep-<config stem>); "
                  "rerunning with the same one resumes")
      ->check(non_empty_path());
  cmd->add_option("--set,-s", o.sets,
                  "override a key: sweep.* for the sweep, others for every trial");
  cmd->add_option("--launcher", o.launcher,
                  "local (child processes; the default) | slurm (writes sweep.sbatch)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_flag("--submit", o.submit, "slurm: sbatch the written script");
  CLI::Option* trial_index =
      cmd->add_option("--trial-index", o.trial_index,
                      "run only trial I of the plan as it stands (sweep.csv's order)")
          ->check(whole_number<int>(0));
  cmd->add_option(
      "--exec", o.exec_command,
      "run this program as each trial instead of lbt train: placeholders {batch_size} "
      "{lr} {seed} {run_dir} {max_steps} {eval_every} {threads} {section.key}; it appends "
      "{\"step\": S, \"val_loss\": V} lines to {run_dir}/eval.jsonl (docs/sweeps.md, "
      "\"Sweeping any program\")");
  cmd->add_option("--trial", o.trial_name,
                  "run only the trial of this name, e.g. 128_3 (a SLURM array task)")
      ->excludes(trial_index);  // --trial won beside it, without a word
  cmd->add_flag("--retry-failed", o.retry_failed, "rerun trials whose status is failed");
  cmd->add_flag("--extend", o.extend,
                "rerun of a sweep directory: add the trials of new batch sizes (a rerun whose "
                "settings changed otherwise is refused, naming what differs)");
  cmd->add_flag("--collect", o.collect_only, "run nothing: rebuild the CSVs, fit.json and plots");
  cmd->add_flag("--no-plots", a.no_plots, "skip notebooks/lbt_sweep_plots.py");
  cmd->add_flag("--quiet,-q", a.quiet, "no progress lines");
  cmd->add_flag(
      "--check", o.check_only,
      "check what every trial checks before its first step, at each batch size (the model's "
      "layer shapes and activations, the micro-batch layout, the optimizer, the schedule "
      "against its budget), and the sweep directory (read only: another plan in it); run "
      "nothing");
}

// An interrupted sweep says how to continue it; its exit code is the signal's.
void throw_if_sweep_interrupted(const experiments::SweepOutcome& r,
                                const experiments::SweepOptions& o) {
  if (r.interrupt_signal == 0) return;
  // A program (--exec) has no checkpoint lbt can resume: its trials start again.
  const bool exec = !o.exec_command.empty();
  throw Interrupted(
      r.interrupt_signal,
      std::string("sweep interrupted by ") + (r.interrupt_signal == SIGINT ? "SIGINT" : "SIGTERM") +
          (exec ? ": its running programs were stopped (status interrupted); "
                : ": its running trials saved a checkpoint (status interrupted); ") +
          "sweep.csv and best.csv in " + r.dir.string() + " hold the trials finished so far",
      "continue it with: " + experiments::sweep_resume_command(o, r.dir) +
          (exec ? " (finished trials are kept, interrupted ones run again)"
                : " (finished trials are kept, interrupted ones continue bit for "
                  "bit)"));
}

void report_sweep(const experiments::SweepOutcome& r, const experiments::SweepOptions& o) {
  if (o.check_only) {
    std::printf(
        "sweep config valid: %d trials to start with (an adaptive LR search and seeds add "
        "more as results come in), each batch size's run checked\n",
        r.trials);
    return;
  }
  if (o.launcher == "slurm" && o.trial_index < 0 && o.trial_name.empty() && !o.collect_only) return;
  if (o.collect_only)  // it runs and keeps nothing: "(0 run now, 0 kept)" read as lost trials
    std::printf("sweep: %d trials collected, %d reached the target, %d failed\n", r.trials,
                r.reached, r.failed);
  else
    std::printf("sweep: %d trials (%d run now, %d kept), %d reached the target, %d failed\n",
                r.trials, r.ran, r.skipped, r.reached, r.failed);
  if (!r.fit_note.empty()) std::printf("fit: %s\n", r.fit_note.c_str());
  if (!r.adaptive_table.empty()) std::printf("%s", r.adaptive_table.c_str());
  std::printf("sweep directory: %s\n", r.dir.c_str());
  if (!r.failed_trials.empty()) {
    // Diverged and unreached trials are outcomes; a crashed trial is not, and a script that
    // checks the exit code must not take the sweep for complete.
    std::string list;
    for (const auto& f : r.failed_trials) list += "\n  " + f;
    throw PartialFailure(std::to_string(r.failed_trials.size()) + " of " +
                             std::to_string(r.trials) +
                             " trials failed (crashed or timed out):" + list,
                         "see each trial's train.log (program.log for --exec); fix the cause and "
                         "rerun with --retry-failed (finished trials are kept)");
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Batch-size sweep to a target: per batch size an LR search, steps-to-result, "
      "sweep.csv / best.csv / fit.json / plots (resumable)");
  add_sweep_options(cmd, *a);
  cmd->footer(config_keys_footer());
  cmd->callback([a] {
    // Under mpirun each rank ran a sweep of its own: -np 2 refused itself as "in use by lbt
    // sweep (pid P)", its twin; -np 1 ran the first trial, and every later one, inheriting
    // mpirun's environment, failed in MPI_Init (2026-11-30 audit).
    if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK"))
      throw ConfigError(
          "lbt sweep was started by mpirun: it launches its own trials, one process each",
          "run lbt sweep without mpirun; for trials on several ranks, "
          "--exec 'mpirun -np N lbt train --config CFG --out {run_dir} ...' (docs/sweeps.md, "
          "--exec)");
    const experiments::SweepOptions o = a->resolved();
    if (o.submit && o.launcher != "slurm")  // it ran the trials here without a word
      throw ConfigError(
          "--submit sbatches the SLURM script; this sweep's launcher is " + o.launcher,
          "add --launcher slurm, or drop --submit to run the trials here");
    // --check writes nothing and starts no trial: a signal ends it at once (130/143).
    if (o.check_only)
      trainer::install_check_interrupt_handlers();
    else
      experiments::install_sweep_interrupt_handlers();
    const auto r = experiments::run_sweep(o);
    throw_if_sweep_interrupted(r, o);
    report_sweep(r, o);
  });
}

}  // namespace lbt::cli
