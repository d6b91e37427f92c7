// `lbt cbs --from RUN_DIR --at-steps 200,800,3200 [--multipliers 1,2,4,8,16] [--tolerance X]
// [--examples N] [--seeds S] [--jobs J] [--out DIR]`: the local critical batch along a run,
// from branches at its checkpoints (experiments/cbs/cbs.hpp, docs/cbs.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "experiments/cbs/cbs.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"

namespace lbt::cli {
namespace {

std::string number_text(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// "256 [128-1024]", "< 128 [64-256]", ">= 2048 [512-unbounded]", or "-" (unmeasured). A bound
// is the median seed's; the interval, what every seed's reading allows, follows it as it follows
// a value (a bound's line hid it, though one seed's reading could contradict the bound).
std::string cbs_text(const experiments::CbsPoint& p, std::int64_t smallest_k,
                     std::int64_t largest_k) {
  const auto& e = p.estimate;
  if (e.bound == "unmeasured" || e.k_max == 0) return "-";
  std::string s = e.bound == "below"      ? "< " + std::to_string(smallest_k * p.batch)
                  : e.bound == "at_least" ? ">= " + std::to_string(largest_k * p.batch)
                                          : std::to_string(e.k_max * p.batch);
  // the CBS the seeds' readings allow (cbs.json's cbs_interval; one seed: the grid's step)
  s += " [" + std::to_string(e.k_lo * p.batch) + "-" +
       (e.k_upper > 0 ? std::to_string(e.k_upper * p.batch) : "unbounded") + "]";
  return s;
}

std::string noise_text(const experiments::BSimpleAtStep& n) {
  if (n.step < 0) return "-";
  if (!std::isfinite(n.b_simple)) {  // not resolved there: what the record bounds it by
    const std::string at = " @" + std::to_string(n.step);
    if (!(n.ci_lo > 0)) return "unresolved" + at;  // ">= 0" would say nothing
    return ">= " + number_text(n.ci_lo, "%.1f") + " (unresolved)" + at;
  }
  return number_text(n.b_simple, "%.1f") + " [" + number_text(n.ci_lo, "%.1f") + "-" +
         number_text(n.ci_hi, "%.1f") + "] @" + std::to_string(n.step);
}

void report(const experiments::CbsOutcome& r, const experiments::CbsOptions& o) {
  std::int64_t smallest = 0, largest = 1;
  for (std::int64_t k : o.multipliers) {
    if (k > 1 && (smallest == 0 || k < smallest)) smallest = k;
    largest = std::max(largest, k);
  }
  // 26: ">= 4096 [4096-unbounded]" and the like fit their column.
  std::printf("%8s %7s %26s %28s %11s %12s\n", "step", "batch", "CBS [interval]",
              "B_simple [ci95] @step", "tolerance", "ref loss");
  for (const auto& p : r.points) {
    std::printf("%8lld %7lld %26s %28s %11s %12s\n", static_cast<long long>(p.step),
                static_cast<long long>(p.batch), cbs_text(p, smallest, largest).c_str(),
                noise_text(p.noise).c_str(), number_text(p.estimate.tolerance, "%.3g").c_str(),
                number_text(p.estimate.reference_loss, "%.6g").c_str());
  }
  for (const auto& w : r.warnings) std::fprintf(stderr, "[cbs] warning: %s\n", w.c_str());
  std::printf("branches: %d (%d run now); cbs.json, cbs.csv, branches.csv%s in %s\n", r.branches,
              r.ran, o.plots ? ", cbs.png" : "", r.out.c_str());
}

}  // namespace

void add_cbs_command(CLI::App& app) {
  auto o = std::make_shared<experiments::CbsOptions>();
  o->multipliers = {1, 2, 4, 8, 16};
  CLI::App* cmd = app.add_subcommand(
      "cbs",
      "The local critical batch along a finished run (Merrill et al. 2025, arXiv:2505.23971): "
      "branches from its checkpoints at k x B, the largest k whose loss stays within a tolerance "
      "of k = 1, beside the run's noise scale B_simple; writes cbs.json, cbs.csv, cbs.png "
      "(resumable)");
  cmd->add_option("--from", o->run_dir,
                  "the reference run's directory (lbt train's; its checkpoints/step_N.ckpt)")
      ->required();
  cmd->add_option(
         "--at-steps", o->steps,
         "checkpoint steps to branch from, e.g. 200,800,3200 (in any order; a repeat counts "
         "once)")
      ->required()
      ->delimiter(',')
      ->check(whole_number<std::int64_t>(0));
  cmd->add_option("--multipliers", o->multipliers,
                  "k: branch batches k x B (1, the reference branch, is always run)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(whole_number(1, kMaxBatch));  // k x B far from int64's end (it wrapped past 2^63)
  cmd->add_option("--tolerance", o->tolerance,
                  "loss tolerance over the k = 1 branch's mean val_loss (default: measured, 2 x "
                  "the std of the k = 1 branch's val_loss over the data-order seeds)")
      ->check(positive_number());
  cmd->add_option("--examples", o->examples,
                  "examples per branch (default: measured per checkpoint from the reference's "
                  "val_loss curve, its fall 4 x its noise, 8 to 64 steps at the largest batch; "
                  "docs/cbs.md)")
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--seeds", o->seeds,
                  "data-order seeds per branch (train.order_seed = the run's seed + 0, 1, ...; "
                  "seed 0 is the reference's own order); the interval runs from the seeds' least "
                  "reading to the next multiplier above their largest (docs/cbs.md)")
      ->capture_default_str()
      ->check(whole_number<int>());
  cmd->add_option("--jobs,-j", o->jobs,
                  "concurrent branches; each gets max(1, cores / jobs) threads")
      ->capture_default_str()
      ->check(whole_number<int>());
  cmd->add_option("--scaling", o->scaling,
                  "LR rule from B to k x B: none, linear or sqrt (default: the run's "
                  "schedule.scaling)");
  cmd->add_option("--out,-o", o->out, "output directory (default: RUN_DIR/cbs); a rerun resumes")
      ->check(non_empty_path());
  cmd->add_flag_callback(
      "--no-plots", [o] { o->plots = false; }, "write no cbs.png");
  cmd->add_flag_callback(
      "--quiet,-q", [o] { o->progress = false; }, "no progress lines");
  cmd->callback([o] {
    experiments::install_sweep_interrupt_handlers(experiments::InterruptedCommand::kCbs);
    report(experiments::run_cbs(*o), *o);
  });
}

}  // namespace lbt::cli
