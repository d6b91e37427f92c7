// Sweep plan; see sweep_plan.hpp.
#include "experiments/sweep_plan.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "experiments/sweep_keys.hpp"
#include "optim/optimizer_keys.hpp"
#include "schedules/scaling.hpp"
#include "trainer/schedule_config.hpp"
#include "trainer/train_config.hpp"
#include "trainer/train_keys.hpp"

namespace lbt::experiments {
namespace {

const KeySpec& key(std::string_view name) {
  return Schema::in(sweep_keys(), name);
}

// The shortest text that reads back as the same double (a trial's LR must be the plan's).
std::string exact(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

SweepSettings read_sweep_settings(Config& c, const std::vector<std::int64_t>& batch_sizes,
                                  int lr_trials, const std::string& target) {
  SweepSettings s;
  s.batch_sizes = c.get_int_list(key("sweep.batch_sizes"));
  if (!batch_sizes.empty()) s.batch_sizes = batch_sizes;
  s.lr_search = c.get_string(key("sweep.lr_search"));
  s.lr_multipliers = c.get_double_list(key("sweep.lr_multipliers"));
  s.lr_trials = static_cast<int>(c.get_int(key("sweep.lr_trials")));
  if (lr_trials > 0) s.lr_trials = lr_trials;
  s.lr_min_factor = c.get_double(key("sweep.lr_min_factor"));
  s.lr_max_factor = c.get_double(key("sweep.lr_max_factor"));
  s.search_momentum = c.get_bool(key("sweep.search_momentum"));
  s.momentum_min = c.get_double(key("sweep.momentum_min"));
  s.momentum_max = c.get_double(key("sweep.momentum_max"));
  s.max_examples = c.get_int(key("sweep.max_examples"));
  s.max_steps = c.get_int(key("sweep.max_steps"));
  s.eval_every_examples = c.get_int(key("sweep.eval_every_examples"));
  s.evals_per_trial = static_cast<int>(c.get_int(key("sweep.evals_per_trial")));
  s.slurm_time = c.get_string(key("sweep.slurm_time"));
  s.slurm_cpus_per_task = c.get_int(key("sweep.slurm_cpus_per_task"));
  s.slurm_options = c.get_string_list(key("sweep.slurm_options"));
  s.target =
      target.empty() ? c.get_string(Schema::in(trainer::train_keys(), "train.target")) : target;
  s.base_lr = c.get_double(Schema::in(optim::optimizer_keys(), "optimizer.lr"));
  const trainer::ScheduleOptions schedule = trainer::read_schedule_options(c);
  s.scaling = schedule.scaling;
  s.reference_batch = schedule.reference_batch;

  if (s.batch_sizes.empty()) {
    throw ConfigError("a sweep needs batch sizes",
                      "pass --batch-sizes 16,32,...,4096 or set sweep.batch_sizes");
  }
  for (auto b : s.batch_sizes) {
    if (b <= 0) c.fail("sweep.batch_sizes", "positive", std::to_string(b));
  }
  std::sort(s.batch_sizes.begin(), s.batch_sizes.end());
  s.batch_sizes.erase(std::unique(s.batch_sizes.begin(), s.batch_sizes.end()), s.batch_sizes.end());
  if (s.lr_search != "grid" && s.lr_search != "log_uniform") {
    c.fail("sweep.lr_search", "one of: grid, log_uniform", "'" + s.lr_search + "'");
  }
  if (s.lr_search == "grid" && !s.lr_multipliers.empty()) {
    for (double m : s.lr_multipliers) {
      if (!(m > 0)) c.fail("sweep.lr_multipliers", "all > 0", number(m));
    }
    if (lr_trials > 0 && lr_trials != static_cast<int>(s.lr_multipliers.size())) {
      throw ConfigError("--lr-trials " + std::to_string(lr_trials) + " disagrees with the " +
                            std::to_string(s.lr_multipliers.size()) + " sweep.lr_multipliers",
                        "drop --lr-trials, or --set sweep.lr_multipliers=[] to derive a grid");
    }
    s.lr_trials = static_cast<int>(s.lr_multipliers.size());
  }
  if (s.lr_trials < 1) c.fail("sweep.lr_trials", ">= 1", std::to_string(s.lr_trials));
  if (!(s.lr_min_factor > 0) || !(s.lr_max_factor >= s.lr_min_factor)) {
    c.fail("sweep.lr_min_factor", "> 0 and <= sweep.lr_max_factor", number(s.lr_min_factor));
  }
  if (s.search_momentum &&
      !(0 <= s.momentum_min && s.momentum_min < s.momentum_max && s.momentum_max < 1)) {
    c.fail("sweep.momentum_min", "0 <= momentum_min < momentum_max < 1", number(s.momentum_min));
  }
  if (s.max_examples < 0) c.fail("sweep.max_examples", ">= 0", std::to_string(s.max_examples));
  if (s.max_steps < 0) c.fail("sweep.max_steps", ">= 0", std::to_string(s.max_steps));
  if (s.max_examples == 0 && s.max_steps == 0) {
    throw ConfigError("a sweep needs a step budget per trial",
                      "set sweep.max_examples (e.g. 20 epochs' worth) and/or sweep.max_steps");
  }
  if (s.eval_every_examples < 0)
    c.fail("sweep.eval_every_examples", ">= 0", std::to_string(s.eval_every_examples));
  if (s.evals_per_trial < 1)
    c.fail("sweep.evals_per_trial", ">= 1", std::to_string(s.evals_per_trial));
  trainer::parse_target(s.target);  // validates
  if (s.target.empty() || s.target == "none") {
    throw ConfigError("a sweep needs a target: steps-to-result is measured against it",
                      "pass --target \"val_accuracy>=0.85\" or set train.target in the config");
  }
  return s;
}

double halton(std::uint64_t index, std::uint64_t base) {
  double f = 1.0, r = 0.0;
  while (index > 0) {
    f /= static_cast<double>(base);
    r += f * static_cast<double>(index % base);
    index /= base;
  }
  return r;
}

double lr_prior(const SweepSettings& s, std::int64_t batch_size) {
  return s.base_lr * schedules::scaling_factor(schedules::scaling_rule(s.scaling), batch_size,
                                               s.reference_batch);
}

std::vector<Trial> make_plan(const SweepSettings& s) {
  // Multipliers of the prior, shared by every batch size so trials are comparable across B.
  std::vector<double> factors, momenta;
  const double lo = std::log(s.lr_min_factor), hi = std::log(s.lr_max_factor);
  for (int k = 0; k < s.lr_trials; ++k) {
    double f;
    if (s.lr_search == "grid") {
      f = !s.lr_multipliers.empty() ? s.lr_multipliers[k]
          : s.lr_trials == 1        ? std::exp(0.5 * (lo + hi))
                                    : std::exp(lo + (hi - lo) * k / (s.lr_trials - 1));
    } else {
      f = std::exp(lo + (hi - lo) * halton(k + 1, 2));  // Halton index from 1 (0 maps to 0)
    }
    factors.push_back(f);
    double m = -1.0;
    if (s.lr_search == "log_uniform" && s.search_momentum) {
      const double a = std::log(1 - s.momentum_max), b = std::log(1 - s.momentum_min);
      m = 1 - std::exp(a + (b - a) * halton(k + 1, 3));
    }
    momenta.push_back(m);
  }

  std::vector<Trial> plan;
  for (std::int64_t B : s.batch_sizes) {
    std::int64_t steps = 0;
    if (s.max_examples > 0) steps = (s.max_examples + B - 1) / B;
    if (s.max_steps > 0) steps = steps > 0 ? std::min(steps, s.max_steps) : s.max_steps;
    steps = std::max<std::int64_t>(steps, 1);
    // Evaluate every eval_every_examples (the same relative resolution of examples-to-target
    // at every B), but at most evals_per_trial times per budget (evaluation is not free).
    const std::int64_t eval_every = std::max<std::int64_t>(
        {1, s.eval_every_examples / B, (steps + s.evals_per_trial - 1) / s.evals_per_trial});
    for (int k = 0; k < s.lr_trials; ++k) {
      Trial t;
      t.index = static_cast<int>(plan.size());
      t.name = std::to_string(B) + "_" + std::to_string(k);
      t.batch_size = B;
      t.k = k;
      t.multiplier = factors[k];
      t.lr = lr_prior(s, B) * factors[k];
      t.momentum = momenta[k];
      t.steps = steps;
      t.eval_every = eval_every;
      // The trial is the base run at batch B: its schedule scales the LR by the same rule
      // from the same reference batch (pinned, since B is now its train.global_batch).
      t.overrides = {"train.global_batch=" + std::to_string(B),
                     "optimizer.lr=" + exact(s.base_lr * t.multiplier),
                     "schedule.reference_batch=" + std::to_string(s.reference_batch),
                     "train.steps=" + std::to_string(steps),
                     "train.eval_every=" + std::to_string(eval_every),
                     "train.target=" + s.target,
                     "train.stop_at_target=true"};
      if (t.momentum >= 0) t.overrides.push_back("optimizer.momentum=" + exact(t.momentum));
      plan.push_back(std::move(t));
    }
  }
  return plan;
}

}  // namespace lbt::experiments
