// lbt cbs; see cbs.hpp.
#include "experiments/cbs/cbs.hpp"

#include <cmath>
#include <cstdio>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/cbs/cbs_branches.hpp"
#include "experiments/child_process.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/json_file.hpp"
#include "experiments/output_kind.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

void check_options(const CbsOptions& o) {
  if (o.jobs < 1) throw ConfigError("--jobs must be >= 1", "e.g. --jobs 2");
  if (!o.scaling.empty() && o.scaling != "none" && o.scaling != "linear" && o.scaling != "sqrt")
    throw ConfigError("--scaling '" + o.scaling + "' is not none, linear or sqrt",
                      "leave it out to use the run's schedule.scaling");
  // The default tolerance is measured from the spread of the k = 1 branch over seeds.
  if (o.seeds < 2 && o.tolerance < 0)
    throw ConfigError("--seeds 1 leaves the tolerance unmeasured: its default is " +
                          std::to_string(static_cast<int>(kToleranceStds)) +
                          " x the std of the k = 1 branch's val_loss over data-order seeds",
                      "use --seeds 2 or more, or give --tolerance");
}

// What every branch in OUT was run with; a rerun with other settings would mix branches of two
// measurements under the same names.
void check_same_settings(const fs::path& out, const nlohmann::json& settings) {
  const fs::path file = out / "cbs_settings.json";
  if (fs::exists(file)) {
    // Its branches' settings are unknown without it: another --out keeps them for a look.
    const nlohmann::json before = read_json_object(
        file, "give another --out (or remove it with OUT/branches to measure there again)");
    if (before != settings) {
      throw ConfigError(out.string() + " holds branches of other settings (" + before.dump() +
                            "; now " + settings.dump() + ")",
                        "give another --out, or the same --from, --examples and --scaling");
    }
    return;
  }
  io::atomic_write(file, settings.dump(2) + "\n");
}

std::vector<std::int64_t> with_one(std::vector<std::int64_t> ks) {
  ks.push_back(1);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

// One checkpoint's branches read back, its estimate and the noise scale there.
CbsPoint measure_point(std::int64_t step, const std::vector<Branch>& plan, const fs::path& dir,
                       const ReferenceRun& ref, const CbsOptions& o) {
  CbsPoint p;
  p.step = step;
  p.batch = ref.global_batch;
  p.length = branch_length(o, ref, step);
  p.examples = p.length.examples;
  p.loss_at_checkpoint = std::nan("");
  for (const EvalPoint& e : ref.eval_curve)
    if (e.examples == step * ref.global_batch) p.loss_at_checkpoint = e.val_loss;
  std::vector<BranchLoss> losses;
  for (const Branch& b : plan) {
    if (b.step != step) continue;
    p.branches.push_back(read_branch_result(b, dir / b.name));
    const BranchResult& r = p.branches.back();
    losses.push_back({b.multiplier, b.seed_index, r.loss, measured_outcome(r.status)});
  }
  p.estimate = estimate_cbs(losses, with_one(o.multipliers), o.seeds, o.tolerance);
  p.noise = read_noise_at_step(ref.dir, step);
  return p;
}

// Every branch failed (not diverged: a failed one measured nothing), as when the reference's
// config.toml no longer matches its checkpoints: an error naming the first's message, not exit
// 0 with "-" everywhere (2026-11-29 audit). Its outputs are written first, for a look.
void refuse_all_failed(const std::vector<CbsPoint>& points, const fs::path& branches) {
  const BranchResult* first = nullptr;
  for (const CbsPoint& p : points) {
    for (const BranchResult& b : p.branches) {
      if (b.status == "completed" || b.status == "diverged") return;
      if (!first) first = &b;
    }
  }
  if (!first) return;
  throw Error("every branch failed; " + first->branch.name + ": " +
                  (first->message.empty() ? first->status : first->message),
              "see " + (branches / first->branch.name / "train.log").string() +
                  "; a reference whose config.toml changed since its checkpoints fails so");
}

// Warnings of one point: a reference branch that fell within noise; no reference branch with a
// loss (each diverged or failed: the point is unmeasured, which "-" alone did not say).
void warn_about(const CbsPoint& p, std::vector<std::string>& warnings) {
  const std::string at = "step " + std::to_string(p.step) + ": ";
  if (p.fall_in_tolerances() < 2.0) {  // NaN (unmeasured) passes
    char text[240];
    std::snprintf(text, sizeof text,
                  "the reference branch fell only %.2g tolerances in %lld examples, "
                  "so its CBS compares noise: give a longer --examples",
                  p.fall_in_tolerances(), static_cast<long long>(p.examples));
    warnings.push_back(at + text);
  }
  // Failed, not merely unfinished (missing, or stopped by a signal: a rerun continues those).
  const auto failed = std::count_if(p.branches.begin(), p.branches.end(), [](const auto& r) {
    return r.status == "failed" || r.status == "timeout";
  });
  if (failed > 0) {
    warnings.push_back(at + std::to_string(failed) +
                       " branch(es) failed (see branches.csv): they measured nothing, so their "
                       "seeds give no reading there; rerun the same lbt cbs to run them again");
  }
  // The estimate's reference loss is the k = 1 branches' mean over those with a loss.
  if (!std::isfinite(p.estimate.reference_loss) && !p.branches.empty()) {
    warnings.push_back(at +
                       "no k = 1 branch ended with a loss (each diverged or failed: see "
                       "branches.csv), so nothing is measured there");
  } else if (!std::isfinite(p.estimate.tolerance)) {  // measured, from one k = 1 loss
    warnings.push_back(at +
                       "one k = 1 branch alone ended with a loss (see branches.csv): the "
                       "tolerance, their spread over seeds, needs two, so nothing is measured "
                       "there");
  }
  // The check above needs the reference's loss at the checkpoint itself (2026-11-29 audit: at
  // eval_every 500 a step-900 point that compared noise passed without a word).
  if (std::isnan(p.loss_at_checkpoint) && std::isfinite(p.estimate.tolerance)) {
    warnings.push_back(at +
                       "the reference run did not evaluate at this checkpoint, so whether its "
                       "k = 1 branch fell by more than the tolerance (or the CBS compares noise) "
                       "is not checked: branch from steps its eval.jsonl lists (a target moves "
                       "its evaluations onto the target's grid, off multiples of "
                       "train.eval_every: 2026-11-29), or rerun it without a target and with a "
                       "train.eval_every that divides them");
  }
}

}  // namespace

CbsOutcome run_cbs(const CbsOptions& options) {
  // Each step once, ascending: a step given twice ran its branches twice and reported it twice.
  CbsOptions o = options;
  std::sort(o.steps.begin(), o.steps.end());
  o.steps.erase(std::unique(o.steps.begin(), o.steps.end()), o.steps.end());
  check_options(o);
  require_utf8_path(o.run_dir, "--from");  // cbs.json records the reference run's path
  const ReferenceRun ref = read_reference_run(o.run_dir, o.scaling);
  const std::vector<Branch> plan = make_cbs_plan(o, ref);  // bad input stops here
  CbsOutcome result;
  result.out = o.out.empty() ? o.run_dir / "cbs" : o.out;
  refuse_other_output(result.out, OutputKind::kCbs, "lbt cbs");
  io::create_directories(result.out / "branches", "lbt cbs directory");
  result.out = fs::canonical(result.out);
  const DirLock lock(result.out / "cbs.lock", DirLock::Mode::kExclusive, "lbt cbs");
  check_same_settings(result.out, {{"reference", fs::canonical(ref.dir).string()},
                                   {"branch_examples", o.examples},  // 0: measured
                                   {"scaling", ref.scaling}});
  const BranchRunOptions run{result.out / "branches", result.out / "checkpoint_seals.json",
                             o.lbt_binary.empty() ? self_executable() : o.lbt_binary, o.jobs,
                             o.progress};
  result.ran = run_branches(plan, ref, run);
  result.branches = static_cast<int>(plan.size());
  if (const int sig = sweep_interrupt_signal()) {
    throw Interrupted(sig, "lbt cbs interrupted; the running branches saved their state",
                      "rerun the same command: it continues them");
  }
  for (std::int64_t step : o.steps) {
    result.points.push_back(measure_point(step, plan, result.out / "branches", ref, o));
    warn_about(result.points.back(), result.warnings);
  }
  if (o.examples > 0 && result.points.front().examples != o.examples) {
    result.warnings.push_back("--examples " + std::to_string(o.examples) + " rounded up to " +
                              std::to_string(result.points.front().examples) +
                              ", a whole number of steps at every multiplier, so every branch "
                              "trains the same examples");
  }
  const CbsSettings settings{fs::canonical(ref.dir), with_one(o.multipliers), o.seeds, ref.scaling,
                             o.tolerance};
  write_cbs_json(result.out / "cbs.json", settings, result.points);
  write_cbs_csv(result.out / "cbs.csv", settings, result.points);
  write_branches_csv(result.out / "branches.csv", result.points);
  if (o.plots)
    if (std::string w = make_cbs_plot(result.out); !w.empty()) result.warnings.push_back(w);
  refuse_all_failed(result.points, result.out / "branches");
  return result;
}

}  // namespace lbt::experiments
