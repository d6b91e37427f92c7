// lbt plan; see scale_plan.hpp.
#include "experiments/scale_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/critical_batch.hpp"
#include "experiments/fit.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/sweep_results.hpp"
#include "schedules/scaling.hpp"
#include "trainer/data/load.hpp"
#include "trainer/run_config.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// The global batch the budget allows, on the point fit.
std::int64_t choose_batch(const ScalePlanOptions& o, const CriticalBatchFit& f) {
  const int budgets = (o.workers > 0) + (o.max_steps > 0) + (o.max_examples > 0);
  if (budgets != 1) {
    throw ConfigError("lbt plan needs exactly one budget",
                      "pass --workers N --micro-batch M, or --max-steps S, or --max-examples E");
  }
  if (o.workers > 0) {
    if (o.micro_batch <= 0) {
      throw ConfigError("--workers needs --micro-batch M (examples per worker and step)",
                        "e.g. --workers 8 --micro-batch 64");
    }
    return o.workers * o.micro_batch;
  }
  if (o.max_steps > 0) {
    // S(B) <= S: B >= B_noise / (S / S_min - 1); the smallest such B uses the fewest examples.
    if (static_cast<double>(o.max_steps) <= f.S_min) {
      throw ConfigError("--max-steps " + std::to_string(o.max_steps) +
                            " cannot reach the target: no batch size takes fewer than S_min = " +
                            num(f.S_min) + " steps",
                        "allow more than " +
                            std::to_string(static_cast<std::int64_t>(std::ceil(f.S_min * 1.25))) +
                            " steps (S_min x 1.25, at a batch of 4 B_crit)");
    }
    const double B = f.B_noise / (static_cast<double>(o.max_steps) / f.S_min - 1.0);
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(B - 1e-9)));
  }
  // E(B) = E_min (1 + B / B_noise) <= E: the largest such B takes the fewest steps.
  if (static_cast<double>(o.max_examples) <= f.E_min) {
    throw ConfigError(
        "--max-examples " + std::to_string(o.max_examples) +
            " cannot reach the target: no batch size uses fewer than E_min = " + num(f.E_min) +
            " examples",
        "allow more than " + std::to_string(static_cast<std::int64_t>(std::ceil(f.E_min * 1.25))) +
            " examples (E_min x 1.25, at a batch of B_crit / 4)");
  }
  const double B = f.B_noise * (static_cast<double>(o.max_examples) / f.E_min - 1.0);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(B + 1e-9)));
}

nlohmann::json interval(double lo, double hi) {
  return nlohmann::json::array({lo, hi});
}

}  // namespace

nlohmann::json plan_at_scale(const ScalePlanOptions& o) {
  const fs::path dir = o.sweep_dir;
  // The fit's own points (the median over seeds), so plan and fit.json agree.
  const std::vector<MeasuredPoint> measured = read_measured_points(dir);
  const std::vector<ScalingPoint> points = point_estimates(measured);
  if (points.size() < 3) {
    throw Error("lbt plan needs at least 3 batch sizes whose best trial reached the target; " +
                    (dir / "best.csv").string() + " has " + std::to_string(points.size()),
                "finish the sweep (rerun lbt sweep on the directory) or widen its budget");
  }
  const CriticalBatchFit fit = fit_critical_batch(points);
  const std::int64_t B = choose_batch(o, fit);
  const double Bd = static_cast<double>(B);

  // Predictions at B, with percentile intervals over bootstrap refits.
  std::vector<double> steps, examples;
  // The bootstrap of lbt fit: batch sizes, seeds and each seed's bracket.
  for (const auto& f : measurement_bootstrap_fits(measured, {}, o.resamples, 0)) {
    steps.push_back(f.S_min * (1.0 + f.B_noise / Bd));
    examples.push_back(steps.back() * Bd);
  }
  const double lo_q = (1 - o.level) / 2, hi_q = (1 + o.level) / 2;
  const double S = fit.S_min * (1.0 + fit.B_noise / Bd);

  // Regime, with lbt fit's tolerance: E within (1 + tol) E_min, or S within (1 + tol) S_min.
  const double tol = o.regime_tolerance;
  std::string regime, why;
  const double extra_examples = Bd / fit.B_crit, extra_steps = fit.B_crit / Bd;
  if (extra_examples <= tol) {
    regime = "perfect_scaling";
    why = "B is " + num(Bd / fit.B_crit) + " x B_crit: examples to target are within " +
          num(100 * extra_examples) + "% of E_min, so doubling B about halves the steps";
  } else if (extra_steps <= tol) {
    regime = "maximal_data_parallelism";
    why = "B is " + num(Bd / fit.B_crit) + " x B_crit: steps are within " + num(100 * extra_steps) +
          "% of S_min, so a larger batch buys almost no steps, only cost";
  } else {
    regime = "diminishing_returns";
    why = "B is " + num(Bd / fit.B_crit) + " x B_crit: steps are " + num(100 * extra_steps) +
          "% above S_min and examples " + num(100 * extra_examples) + "% above E_min";
  }

  // The trials' config, at batch B.
  Config config = load_config(dir / "base_config.toml", {}, nullptr);
  const nlohmann::json manifest = nlohmann::json::parse(io::read_file(dir / "sweep.json"));
  const std::string target = manifest.value("target", "");
  const trainer::RunConfig base = trainer::resolve_run_config(config, 1);
  const double rule = schedules::scaling_factor(schedules::scaling_rule(base.schedule.scaling), B,
                                                base.schedule.reference_batch);
  // The LR law of lbt fit (lr_law.hpp) over the batch sizes that reached the target.
  const std::vector<LrPoint> lr_points = read_lr_points(dir);
  double lr = base.optimizer.lr * rule;
  std::string lr_source = "the scaling rule " + base.schedule.scaling + " from batch " +
                          std::to_string(base.schedule.reference_batch) +
                          " (fewer than 3 reached batch sizes for an LR law)";
  if (lr_points.size() >= 3) {
    const PowerLaw law = fit_power_law(lr_points);
    const auto [lo, hi] = std::minmax_element(
        lr_points.begin(), lr_points.end(),
        [](const LrPoint& a, const LrPoint& b) { return a.batch_size < b.batch_size; });
    lr = law.c * std::pow(Bd, law.alpha);
    lr_source = "the sweep's LR law lr = " + num(law.c) + " x B^" + num(law.alpha) + " over " +
                std::to_string(lr_points.size()) + " batch sizes" +
                (Bd < lo->batch_size || Bd > hi->batch_size
                     ? " (extrapolated: B is outside the swept " + num(lo->batch_size) + ".." +
                           num(hi->batch_size) + ")"
                     : "");
  }
  // Resolution of steps-to-target: about 2% of the predicted steps.
  const std::int64_t eval_every = std::max<std::int64_t>(1, std::llround(S / 50.0));
  const double steps_hi = quantile(steps, hi_q);
  std::int64_t budget = static_cast<std::int64_t>(std::ceil(1.5 * steps_hi)) + eval_every;
  if (o.max_steps > 0) budget = std::min(budget, o.max_steps);
  // optimizer.lr is given at the reference batch: the schedule's own rule takes it to lr at B,
  // so warmup from the base LR and LEGW keep their meaning.
  for (const std::string& s :
       {"train.global_batch=" + std::to_string(B), "train.steps=" + std::to_string(budget),
        "train.eval_every=" + std::to_string(eval_every), "train.target=" + target,
        std::string("train.stop_at_target=true")}) {
    config.set(s);
  }
  char lr_text[32];
  std::snprintf(lr_text, sizeof lr_text, "%.17g", lr / rule);
  config.set(std::string("optimizer.lr=") + lr_text);
  if (o.workers > 0) config.set("train.micro_batch=" + std::to_string(o.micro_batch));
  config.validate(lbt_schema());
  const int world = o.workers > 0 ? o.workers : 1;
  const trainer::RunConfig run = trainer::resolve_run_config(config, world);
  // The schedule as the run will build it (a warmup longer than the budget fails here).
  const std::int64_t train_examples = data::load_splits(run.train.data, run.train.seed).train.n;
  trainer::run_schedule(run, trainer::step_budget(run.train, train_examples, world), nullptr);

  nlohmann::json plan = {
      {"sweep_dir", fs::absolute(dir).string()},
      {"budget",
       {{"workers", o.workers},
        {"micro_batch", o.micro_batch},
        {"max_steps", o.max_steps},
        {"max_examples", o.max_examples}}},
      {"target", target},
      {"global_batch", B},
      {"lr", lr},
      {"lr_source", lr_source},
      {"steps_to_target", S},
      {"steps_to_target_interval", interval(quantile(steps, lo_q), steps_hi)},
      {"examples_to_target", S * Bd},
      {"examples_to_target_interval", interval(quantile(examples, lo_q), quantile(examples, hi_q))},
      {"eval_every", eval_every},
      {"interval_level", o.level},
      {"fit", {{"S_min", fit.S_min}, {"E_min", fit.E_min}, {"B_crit", fit.B_crit}}},
      {"regime", regime},
      {"regime_why", why},
      {"schedule",
       {{"scaling", run.schedule.scaling},
        {"recipe", run.schedule.recipe},
        {"warmup", run.schedule.warmup},
        {"warmup_unit", run.schedule.warmup_unit},
        {"decay", run.schedule.decay}}},
      {"train_steps", budget},
  };
  // The trials' measured noise scale, beside B_crit (lbt fit writes it when noise.jsonl exist).
  if (auto measured = best_trials_b_simple(dir / "best.csv", "b_simple_avg"); !measured.empty()) {
    const double m = quantile(measured, 0.5);
    plan["measured_b_simple"] = {
        {"median", m}, {"trials", measured.size()}, {"b_crit_over_b_simple", fit.B_crit / m}};
  }
  if (o.max_steps > 0 && steps_hi > static_cast<double>(o.max_steps)) {
    plan["warning"] = "the interval's upper end (" + num(steps_hi) + " steps) exceeds --max-steps";
  }
  const fs::path out = o.out.empty() ? dir / "plan.toml" : o.out;
  std::ostringstream toml;
  toml << "# Written by lbt plan from " << fs::absolute(dir).string() << ": global batch " << B
       << ", peak LR " << num(lr) << " (" << lr_source << ").\n"
       << "# Predicted steps to " << target << ": " << num(S) << " [" << num(quantile(steps, lo_q))
       << ", " << num(steps_hi) << "] (" << 100 * o.level << "% interval); regime " << regime
       << ".\n# Run it as is: lbt train --config " << out.string() << "\n"
       << config.resolved_toml();
  io::atomic_write(out, toml.str());
  plan["config"] = fs::absolute(out).string();
  io::atomic_write(dir / "plan.json", plan.dump(2) + "\n");
  return plan;
}

std::string format_scale_plan(const nlohmann::json& p) {
  std::ostringstream ss;
  const auto& si = p["steps_to_target_interval"];
  const auto& ei = p["examples_to_target_interval"];
  ss << "plan: global batch " << p["global_batch"].get<std::int64_t>() << ", peak LR "
     << num(p["lr"].get<double>()) << "\n"
     << "  LR from " << p["lr_source"].get<std::string>() << "\n"
     << "  steps to " << p["target"].get<std::string>() << ": "
     << num(p["steps_to_target"].get<double>()) << " [" << num(si[0].get<double>()) << ", "
     << num(si[1].get<double>()) << "], examples " << num(p["examples_to_target"].get<double>())
     << " [" << num(ei[0].get<double>()) << ", " << num(ei[1].get<double>()) << "] ("
     << 100 * p["interval_level"].get<double>() << "% bootstrap intervals; evaluated every "
     << p["eval_every"].get<std::int64_t>() << " steps)\n"
     << "  regime: " << p["regime"].get<std::string>() << ": " << p["regime_why"].get<std::string>()
     << "\n"
     << "  schedule: the sweep's (scaling " << p["schedule"]["scaling"].get<std::string>()
     << ", recipe " << p["schedule"]["recipe"].get<std::string>() << ", warmup "
     << num(p["schedule"]["warmup"].get<double>()) << " "
     << p["schedule"]["warmup_unit"].get<std::string>() << ", decay "
     << p["schedule"]["decay"].get<std::string>() << "), budget "
     << p["train_steps"].get<std::int64_t>() << " steps\n";
  if (p.contains("measured_b_simple")) {
    const auto& n = p["measured_b_simple"];
    ss << "  measured B_simple (averaged over training, median over " << n["trials"].get<int>()
       << " best trials): " << num(n["median"].get<double>())
       << ", B_crit / B_simple = " << num(n["b_crit_over_b_simple"].get<double>()) << "\n";
  }
  if (p.contains("warning")) ss << "  warning: " << p["warning"].get<std::string>() << "\n";
  ss << "  config: " << p["config"].get<std::string>() << " (lbt train --config it as is)\n";
  return ss.str();
}

}  // namespace lbt::experiments
