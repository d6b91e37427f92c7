// `lbt plan --from SWEEP_DIR (--workers N --micro-batch M | --max-steps S | --max-examples E)
//  [--out FILE [--overwrite]]`: the global batch, LR and schedule to run at scale, with predicted
//  steps and examples to the target; writes a config `lbt train` runs as is; and its memory per
//  rank (as `lbt memory --config PLAN --workers N --memory M` reports it).
// `lbt plan --from CBS_DIR [--workers N --micro-batch M] [--max-batch B]`: a batch warmup that
//  follows the critical batch lbt cbs measured (experiments/cbs/batch_warmup.hpp).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "analysis/critical_batch.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "experiments/cbs/batch_warmup.hpp"
#include "experiments/memory/memory_report.hpp"
#include "experiments/sweep/scale_plan.hpp"

namespace lbt::cli {
namespace {

// The plan's memory per rank, as `lbt memory --config PLAN --workers N --memory M` reports it.
// `runtime_bytes` is read before the plan loads any data.
void print_memory(const std::string& config_path, int workers, std::int64_t runtime_bytes,
                  const std::string& memory) {
  experiments::MemoryOptions m;
  m.runtime_bytes = runtime_bytes;
  m.memory = trainer::parse_memory_size(memory, "--memory");
  m.config_path = config_path;
  m.workers = workers;
  std::printf("memory (lbt memory --config %s --workers %d):\n%s", m.config_path.c_str(), m.workers,
              experiments::format_memory_summary(experiments::memory_report(m)).c_str());
}

// From lbt cbs's directory: the budget is the reference run's, so only the layout is given.
void plan_warmup(const experiments::ScalePlanOptions& o, const std::string& from,
                 const std::string& out, std::int64_t max_batch, const std::string& memory) {
  if (o.max_steps > 0 || o.max_examples > 0)
    throw ConfigError("--max-steps and --max-examples are for sweep directories; " + from +
                          " is lbt cbs's (the warmup keeps the reference run's examples)",
                      "drop them; pass --workers N --micro-batch M and --max-batch B");
  if ((o.workers > 0) != (o.micro_batch > 0))
    throw ConfigError("--workers and --micro-batch go together",
                      "e.g. --workers 8 --micro-batch 64, or neither (the reference's layout)");
  trainer::parse_memory_size(memory, "--memory");  // bad --memory: refused before any work
  const auto runtime_bytes = trainer::resident_bytes_now();
  const auto plan =
      experiments::plan_batch_warmup({from, o.workers, o.micro_batch, max_batch, out, o.overwrite});
  std::printf("%s", experiments::format_warmup_plan(plan).c_str());
  print_memory(plan["config"].get<std::string>(), plan["workers"].get<int>(), runtime_bytes,
               memory);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto o = std::make_shared<experiments::ScalePlanOptions>();
  auto from = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto memory = std::make_shared<std::string>("16GiB");
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "What to run at scale, from a sweep: global batch, LR, schedule, predicted steps "
      "and examples to the target, regime; or, from lbt cbs's directory, a batch warmup that "
      "follows the measured critical batch; writes a config for lbt train");
  auto max_batch = std::make_shared<std::int64_t>(0);
  cmd->add_option("--from", *from,
                  "sweep directory (written by lbt sweep), or lbt cbs's directory (cbs.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  // Bounded so that workers x micro-batch, and examples at a plan's steps, stay far from int64's
  // end (2^63 x 2 wrapped to a negative batch, and a cbs warmup divided by it: SIGFPE).
  cmd->add_option("--workers", o->workers, "budget: this many data-parallel workers ...")
      ->check(whole_number(1, kMaxWorkers));
  cmd->add_option("--micro-batch", o->micro_batch, "... each taking this many examples a step")
      ->check(whole_number(1, kMaxBatch));
  cmd->add_option("--max-steps", o->max_steps,
                  "budget: at most this many steps (the smallest batch that fits, fewest examples)")
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--max-examples", o->max_examples,
                  "budget: at most this many examples (the largest batch that fits, fewest steps)")
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--max-batch", *max_batch,
                  "from lbt cbs: the largest batch of the warmup (default: the training set)")
      ->check(whole_number(1, kMaxBatch));
  cmd->add_option("--out,-o", *out,
                  "the config to write (default: FROM_DIR/plan.toml), and the plan as JSON beside "
                  "it (plan.toml -> plan.json); an existing file is replaced only if lbt plan "
                  "wrote it")
      ->check(non_empty_path());
  cmd->add_flag("--overwrite", o->overwrite, "replace --out even if lbt plan did not write it");
  cmd->add_option("--resamples", o->resamples,
                  "bootstrap resamples for the intervals (default 2000; at least 40: a 95% "
                  "percentile interval needs a replicate in each 2.5% tail)")
      ->check(whole_number(static_cast<std::int64_t>(analysis::min_resamples(0.95)),
                           analysis::kMaxResamples));
  cmd->add_option("--memory", *memory,
                  "memory per rank for the plan's memory lines, e.g. 16GiB, 80GB (default 16GiB)");
  cmd->callback([o, from, out, memory, max_batch] {
    if (std::filesystem::exists(std::filesystem::path(*from) / "cbs.json")) {
      plan_warmup(*o, *from, *out, *max_batch, *memory);
      return;
    }
    if (*max_batch > 0)
      throw ConfigError("--max-batch is for lbt cbs's directories; " + *from + " has no cbs.json",
                        "drop --max-batch, or give --from the directory lbt cbs wrote");
    // A run directory (or any other) said as such, not as a missing sweep.json.
    if (!std::filesystem::exists(std::filesystem::path(*from) / "sweep.json"))
      throw ConfigError("--from " + *from + " is neither a sweep directory (sweep.json) nor lbt " +
                            "cbs's (cbs.json)",
                        "give --from the directory lbt sweep or lbt cbs wrote");
    // The budget's flags are named here; analysis/plan.cpp checks the same without them.
    if ((o->workers > 0) + (o->max_steps > 0) + (o->max_examples > 0) != 1) {
      throw ConfigError("lbt plan needs exactly one budget",
                        "pass --workers N --micro-batch M, or --max-steps S, or --max-examples E");
    }
    if (o->workers > 0 && o->micro_batch <= 0) {
      throw ConfigError("--workers needs --micro-batch M (examples per worker and step)",
                        "e.g. --workers 8 --micro-batch 64");
    }
    trainer::parse_memory_size(*memory, "--memory");  // bad --memory: refused before any work
    const auto runtime_bytes = trainer::resident_bytes_now();
    o->sweep_dir = *from;
    o->out = *out;
    const auto plan = experiments::plan_at_scale(*o);
    std::printf("%s", experiments::format_scale_plan(plan).c_str());
    if (plan["exec"].is_string()) {  // lbt's estimate would be of its own model's run
      std::printf(
          "memory: not estimated: the sweep's trials ran a program (--exec), not lbt's "
          "model\n");
      return;
    }
    print_memory(plan["config"].get<std::string>(), o->workers > 0 ? o->workers : 1, runtime_bytes,
                 *memory);
  });
}

}  // namespace lbt::cli
