// lbt plan; see scale_plan.hpp.
#include "experiments/sweep/scale_plan.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

#include "analysis/plan.hpp"
#include "analysis/sweep_fit.hpp"
#include "core/error.hpp"
#include "core/io.hpp"
#include "core/json_number.hpp"
#include "core/toml_text.hpp"
#include "experiments/json_file.hpp"
#include "experiments/sweep/fit_files.hpp"
#include "experiments/sweep/plan_run.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "schedules/scaling.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
using analysis::plan_number;
namespace {

std::string num(double x) {
  return plan_number(x);
}

// "[lo, hi]" of an interval as plan.json writes it; "[no interval]" for null (the bootstrap had
// nothing to vary).
std::string bracket(const nlohmann::json& i) {
  if (!i.is_array()) return "[no interval]";
  return "[" + num(i[0].get<double>()) + ", " +
         (i[1].is_null() ? std::string("open)") : num(i[1].get<double>()) + "]");
}

// " (in 62% of the bootstrap's fits)": how sure the regime call is (RegimeCall::agreement; NaN
// or null where the bootstrap fitted fewer than min_resamples).
std::string regime_agreement_text(double share) {
  if (!std::isfinite(share)) return " (too few bootstrap fits to check it against)";
  return " (in " + num(100 * share) + "% of the bootstrap's fits)";
}
std::string regime_agreement_text(const nlohmann::json& share) {
  return regime_agreement_text(share.is_number() ? share.get<double>() : NAN);
}

// The sweep's fit as lbt plan needs it: the fit's own points (the median over seeds, so plan
// and fit.json agree) and the point fit.
struct SweepForPlan {
  std::vector<analysis::MeasuredPoint> measured;
  analysis::CriticalBatchFit fit;
};

SweepForPlan fit_sweep_for_plan(const fs::path& dir) {
  std::vector<analysis::MeasuredPoint> measured = read_measured_points(dir);
  // As lbt fit: a batch size whose median over seeds is censored is left out (its steps read
  // "nan" here, and lbt plan refused a sweep lbt fit had fitted; 2026-11-29 audit).
  analysis::leave_out_censored(measured);
  if (measured.size() < 3) {
    throw Error(
        "lbt plan needs at least 3 batch sizes whose best trial reached the target; the "
        "sweep in " +
            dir.string() + " has " + std::to_string(measured.size()),
        "finish the sweep (rerun lbt sweep on the directory) or widen its budget");
  }
  const analysis::CriticalBatchFit fit =
      analysis::fit_critical_batch(analysis::point_estimates(measured));
  if (!fit.resolved) {
    throw Error(
        "lbt plan: the sweep in " + dir.string() +
            " shows no critical batch (its steps "
            "to the target do not fall as the batch grows), so there is no curve to plan on",
        "sweep smaller batch sizes, or check the target and the LR search (lbt fit " +
            dir.string() + " shows the points)");
  }
  if (fit.above_sweep) {  // the curve is a line S = E_min / B with no knee to place B on
    throw Error("lbt plan: the sweep in " + dir.string() +
                    " scales perfectly at every batch size it swept (B_crit lies past 100x the "
                    "largest), so it cannot say where larger batches stop paying",
                "sweep larger batch sizes (lbt fit " + dir.string() + " shows the points)");
  }
  return {std::move(measured), fit};
}

// The peak LR at B: the sweep's LR law (analysis/lr_law.hpp) over the batch sizes that reached
// the target, else the trials' scaling rule from their reference batch. Also returns that rule's
// factor at B, since optimizer.lr is written at the reference batch.
std::pair<analysis::LrChoice, double> plan_lr(const fs::path& dir, const trainer::RunConfig& base,
                                              std::int64_t B) {
  const double rule = schedules::scaling_factor(schedules::scaling_rule(base.schedule.scaling), B,
                                                base.schedule.reference_batch);
  const std::string rule_source =
      "the scaling rule " + base.schedule.scaling + " from batch " +
      std::to_string(base.schedule.reference_batch) +
      " (fewer than 3 reached batch sizes with a searched LR for an LR law)";
  return {analysis::lr_at(B, read_lr_points(dir), base.optimizer.lr * rule, rule_source), rule};
}

nlohmann::json plan_json(const ScalePlanOptions& o, const SweepForPlan& sweep,
                         const std::string& target, std::int64_t B, const analysis::LrChoice& lr,
                         const analysis::Prediction& p, const analysis::RegimeCall& regime,
                         std::int64_t eval_every, std::int64_t budget,
                         const trainer::RunConfig& run) {
  const analysis::FitOptions fit_options{.resamples = o.resamples, .level = o.level};
  nlohmann::json plan = {
      {"sweep_dir", fs::absolute(o.sweep_dir).string()},
      {"budget",
       {{"workers", o.workers},
        {"micro_batch", o.micro_batch},
        {"max_steps", o.max_steps},
        {"max_examples", o.max_examples}}},
      {"target", target},
      {"global_batch", B},
      {"lr", lr.lr},
      {"lr_interval", analysis::interval_json({lr.lo, lr.hi})},
      {"lr_source", lr.source},
      {"steps_to_target", p.steps},
      {"steps_to_target_interval", analysis::interval_json(p.steps_interval)},
      {"examples_to_target", p.examples},
      {"examples_to_target_interval", analysis::interval_json(p.examples_interval)},
      {"eval_every", eval_every},
      {"interval_level", o.level},
      {"fit", analysis::fit_with_intervals(sweep.measured, fit_options)},
      {"regime", analysis::regime_name(regime.regime)},
      {"regime_why", regime.why},
      {"B_over_B_crit", regime.b_over_b_crit},
      {"B_over_B_crit_interval", analysis::interval_json(regime.b_over_b_crit_interval)},
      {"regime_agreement", finite_or_null(regime.agreement)},
      {"schedule",
       {{"scaling", run.schedule.scaling},
        {"recipe", run.schedule.recipe},
        {"warmup", run.schedule.warmup},
        {"warmup_unit", run.schedule.warmup_unit},
        {"decay", run.schedule.decay}}},
      {"train_steps", budget},
  };
  // The trials' measured noise scale, beside B_crit (lbt fit writes it when noise.jsonl exist).
  const fs::path best_csv = o.sweep_dir / "best.csv";
  if (auto measured = best_trials_b_simple(best_csv, "b_simple_avg"); !measured.empty()) {
    const auto b = analysis::measured_b_simple(measured, fit_options);
    const auto ratio = analysis::b_crit_over_b_simple(sweep.measured, measured, fit_options);
    plan["measured_b_simple"] = {
        {"median", finite_or_null(b.median)},
        {"interval", b.interval ? analysis::interval_json(*b.interval) : nlohmann::json()},
        {"interval_coverage", b.interval ? nlohmann::json(b.coverage) : nlohmann::json()},
        {"trials", measured.size()},
        {"b_crit_over_b_simple", ratio.value ? nlohmann::json(*ratio.value) : nlohmann::json()},
        {"b_crit_over_b_simple_interval",
         ratio.interval ? analysis::interval_json(*ratio.interval) : nlohmann::json()},
        {"b_crit_over_b_simple_coverage",
         ratio.interval ? nlohmann::json(ratio.coverage) : nlohmann::json()}};
  }
  if (o.max_steps > 0 && p.steps_interval.hi > static_cast<double>(o.max_steps)) {
    plan["warning"] =
        "the interval's upper end (" + num(p.steps_interval.hi) + " steps) exceeds --max-steps";
  }
  if (o.max_examples > 0 && p.examples_interval.hi > static_cast<double>(o.max_examples)) {
    plan["warning"] = "the interval's upper end (" + num(p.examples_interval.hi) +
                      " examples) exceeds --max-examples";
  }
  return plan;
}

// The config `lbt train` runs as is, headed by what it predicts.
void write_plan_config(const fs::path& out, const ScalePlanOptions& o, const Config& config,
                       std::int64_t B, const analysis::LrChoice& lr, const analysis::Prediction& p,
                       const std::string& target, const analysis::RegimeCall& regime,
                       const std::string& exec) {
  std::ostringstream toml;
  toml << kPlanHeader << comment_text(fs::absolute(o.sweep_dir).string()) << ": global batch " << B
       << ", peak LR " << num(lr.lr) << " (" << lr.source << ").\n"
       << "# Predicted steps to " << target << ": " << num(p.steps) << " "
       << bracket(analysis::interval_json(p.steps_interval)) << " (" << 100 * o.level
       << "% interval); regime " << analysis::regime_name(regime.regime)
       << regime_agreement_text(regime.agreement) << ".\n";
  if (exec.empty()) {  // a plan for several workers said nothing of mpirun (2026-11-30 audit)
    toml << "# Run it as is: "
         << (o.workers > 1 ? "mpirun -np " + std::to_string(o.workers) + " " : std::string())
         << "lbt train --config " << comment_text(out.string()) << "\n";
  } else {  // lbt train would train lbt's model, not the program the prediction rests on
    toml << "# The sweep's trials ran a program (--exec): run it at this batch and LR as they "
            "did,\n# "
         << comment_text(exec)
         << "\n# The keys below are the trials' config, which "
            "it reads through {section.key}.\n";
  }
  toml << config.resolved_toml();
  io::atomic_write(out, toml.str());
}

}  // namespace

fs::path plan_json_path(const fs::path& out) {
  fs::path json = out;
  if (out.extension() == ".toml") return json.replace_extension(".json");
  return json += ".json";
}

namespace {

bool written_by_lbt_plan_toml(const fs::path& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return first.starts_with(kPlanHeader);
}

bool written_by_lbt_plan_json(const fs::path& path) {
  std::ifstream in(path);
  const auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return json.is_object() && json.contains("config");
}

}  // namespace

void check_plan_out(const fs::path& out, bool overwrite) {
  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    throw ConfigError("lbt plan --out " + out.string() + " is a directory",
                      "pass a file name, e.g. --out " + (out / "plan.toml").string());
  }
  if (out.extension() == ".json")
    throw ConfigError(
        "lbt plan --out " + out.string() +
            " names a .json file: --out is the plan's config, and its JSON is "
            "written beside it",
        "pass a .toml name, e.g. --out " + fs::path(out).replace_extension(".toml").string());
  if (overwrite) return;
  for (const auto& [path, ours] : {std::pair{out, &written_by_lbt_plan_toml},
                                   std::pair{plan_json_path(out), &written_by_lbt_plan_json}}) {
    if (!fs::exists(path, ec)) continue;
    if (fs::is_regular_file(path, ec) && ours(path)) continue;  // a FIFO would block the read
    throw ConfigError(path == out
                          ? "lbt plan --out " + out.string() +
                                ": the file exists and lbt plan did not write it (no "
                                "\"# Written by lbt plan\" first line)"
                          : "lbt plan --out " + out.string() + ": its JSON " + path.string() +
                                " exists and lbt plan did not write it (no \"config\" "
                                "key)",
                      "pass another --out, or add --overwrite to replace it");
  }
}

nlohmann::json plan_at_scale(const ScalePlanOptions& o) {
  const fs::path out = o.out.empty() ? o.sweep_dir / "plan.toml" : o.out;
  check_plan_out(out, o.overwrite);          // before any work
  require_utf8_path(o.sweep_dir, "--from");  // plan.json and plan.toml name it
  const SweepManifest manifest = read_sweep_manifest(o.sweep_dir);
  const std::string& target = manifest.target;
  const SweepForPlan sweep = fit_sweep_for_plan(o.sweep_dir);
  const std::int64_t B = analysis::batch_for_budget(
      {o.workers, o.micro_batch, o.max_steps, o.max_examples}, sweep.fit);
  const std::vector<analysis::CriticalBatchFit> replicates =
      analysis::measurement_bootstrap_fits(sweep.measured, {}, o.resamples, 0);
  const analysis::Prediction p = analysis::predict_at(B, sweep.fit, replicates, o.level);
  const analysis::RegimeCall regime =
      analysis::regime_at(B, sweep.fit.B_crit, o.regime_tolerance, replicates, o.level);

  // The trials' config, at batch B.
  Config config = trials_config(o.sweep_dir, manifest);
  const trainer::RunConfig base = trainer::resolve_run_config(config, 1);
  const auto [lr, rule] = plan_lr(o.sweep_dir, base, B);
  // optimizer.lr is written at the trials' reference batch: pinned, since its default would
  // follow train.global_batch to B and the rule would not scale the LR back up to lr.
  config.set("schedule.reference_batch=" + std::to_string(base.schedule.reference_batch));
  // Resolution of steps-to-target: about 2% of the predicted steps.
  const std::int64_t eval_every = std::max<std::int64_t>(1, std::llround(p.steps / 50.0));
  // The run is a trial's length at B, so a schedule that decays to the end of the run decays as
  // the trials' did (a run of 1.5 x the predicted steps decayed faster: at the predicted step its
  // LR was 44% of the peak against the trials' 98%, 2026-11-29 audit); --max-steps may cut it.
  // A sweep.json from before it recorded the trials' budget: 1.5 x the predicted steps.
  const double upper = std::isfinite(p.steps_interval.hi) ? p.steps_interval.hi : p.steps;
  const std::int64_t horizon =
      manifest.max_steps >= 0 ? trial_steps(manifest.max_examples, manifest.max_steps, B) : 0;
  std::int64_t budget =
      horizon > 0 ? horizon : static_cast<std::int64_t>(std::ceil(1.5 * upper)) + eval_every;
  if (o.max_steps > 0) budget = std::min(budget, o.max_steps);
  const auto [run, differs] = set_plan_run(config, {.global_batch = B,
                                                    .steps = budget,
                                                    .eval_every = eval_every,
                                                    .trials_steps = horizon,
                                                    .target = target,
                                                    .lr_at_reference = lr.lr / rule,
                                                    .workers = o.workers,
                                                    .micro_batch = o.micro_batch,
                                                    .max_steps = o.max_steps});

  nlohmann::json plan = plan_json(o, sweep, target, B, lr, p, regime, eval_every, budget, run);
  plan["trials_steps"] = horizon > 0 ? nlohmann::json(horizon) : nlohmann::json();
  if (differs) {
    plan["schedule_warning"] =
        "the run's " + std::to_string(budget) + " steps (--max-steps) are fewer than a trial's " +
        std::to_string(horizon) +
        " at this batch, and the schedule depends on the run's length: it is not the trials' "
        "schedule the prediction rests on";
  }
  // Past the swept batches the steps, their interval and the regime extend the fitted curve,
  // whose bootstrap interval stays narrow where nothing was measured (a plan at 4x the largest
  // swept batch read 2.90 [2.88, 2.93] steps and its run took 11; 2026-11-30 audit).
  const auto [least, most] =
      std::minmax_element(sweep.measured.begin(), sweep.measured.end(),
                          [](const auto& a, const auto& b) { return a.batch_size < b.batch_size; });
  if (static_cast<double>(B) > most->batch_size || static_cast<double>(B) < least->batch_size) {
    const bool above = static_cast<double>(B) > most->batch_size;
    plan["extrapolation_warning"] =
        "global batch " + std::to_string(B) + " lies " +
        (above ? "above the largest batch swept, " + num(most->batch_size)
               : "below the smallest batch swept, " + num(least->batch_size)) +
        ": the steps, their interval and the regime extrapolate the fitted curve, and the "
        "interval does not cover that; check with a short run, or sweep that far";
  }
  write_plan_config(out, o, config, B, lr, p, target, regime, manifest.exec);
  plan["config"] = fs::absolute(out).string();
  plan["exec"] = manifest.exec.empty() ? nlohmann::json() : nlohmann::json(manifest.exec);
  io::atomic_write(plan_json_path(out), plan.dump(2) + "\n");
  return plan;
}

std::string format_scale_plan(const nlohmann::json& p) {
  std::ostringstream ss;
  const auto& si = p["steps_to_target_interval"];
  const auto& ei = p["examples_to_target_interval"];
  ss << "plan: global batch " << p["global_batch"].get<std::int64_t>() << ", peak LR "
     << num(p["lr"].get<double>()) << " " << bracket(p["lr_interval"]) << "\n"
     << "  LR from " << p["lr_source"].get<std::string>() << "\n"
     << "  steps to " << p["target"].get<std::string>() << ": "
     << num(p["steps_to_target"].get<double>()) << " " << bracket(si) << ", examples "
     << num(p["examples_to_target"].get<double>()) << " " << bracket(ei) << " ("
     << 100 * p["interval_level"].get<double>()
     << "% bootstrap intervals of the fitted curve, a median over seeds: one run spreads wider; "
        "evaluated every "
     << (p["eval_every"].get<std::int64_t>() == 1
             ? std::string("step")
             : std::to_string(p["eval_every"].get<std::int64_t>()) + " steps")
     << ")\n"
     << "  regime: " << p["regime"].get<std::string>()
     << regime_agreement_text(p["regime_agreement"]) << ": " << p["regime_why"].get<std::string>()
     << "\n"
     << "  schedule: the sweep's (scaling " << p["schedule"]["scaling"].get<std::string>()
     << ", recipe " << p["schedule"]["recipe"].get<std::string>() << ", warmup "
     << num(p["schedule"]["warmup"].get<double>()) << " "
     << p["schedule"]["warmup_unit"].get<std::string>() << ", decay "
     << p["schedule"]["decay"].get<std::string>() << "), budget "
     << p["train_steps"].get<std::int64_t>() << " steps"
     << (p.value("trials_steps", nlohmann::json()) == p["train_steps"]
             ? " (a trial's at this batch)"
             : "")
     << "\n";
  if (p.contains("measured_b_simple")) {
    const auto& n = p["measured_b_simple"];
    const double level = p["interval_level"];
    ss << "  measured B_simple (averaged over training, median over " << n["trials"].get<int>()
       << " best trials): "
       << analysis::measured_text(n["median"], n["interval"],
                                  analysis::coverage_note(n["interval_coverage"], level))
       << ", B_crit / B_simple = "
       << analysis::measured_text(
              n["b_crit_over_b_simple"], n["b_crit_over_b_simple_interval"],
              analysis::coverage_note(n["b_crit_over_b_simple_coverage"], level, true))
       << "\n";
  }
  for (const char* key : {"warning", "schedule_warning", "extrapolation_warning"})
    if (p.contains(key)) ss << "  warning: " << p[key].get<std::string>() << "\n";
  if (p.value("exec", nlohmann::json()).is_string()) {
    ss << "  config: " << p["config"].get<std::string>()
       << " (the trials' config; they ran a program: run it at this batch and LR, as the sweep "
          "did: "
       << p["exec"].get<std::string>() << ")\n";
  } else {
    const int workers = p["budget"]["workers"].get<int>();
    ss << "  config: " << p["config"].get<std::string>() << " ("
       << (workers > 1 ? "mpirun -np " + std::to_string(workers) + " " : std::string())
       << "lbt train --config it as is)\n";
  }
  return ss.str();
}

}  // namespace lbt::experiments
