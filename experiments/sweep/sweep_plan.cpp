// Sweep plan; see sweep_plan.hpp.
#include "experiments/sweep/sweep_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.hpp"
#include "core/toml_text.hpp"
#include "experiments/sweep_keys.hpp"
#include "optim/optimizer_keys.hpp"
#include "schedules/scaling.hpp"
#include "schedules/schedule_options.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_config.hpp"
#include "trainer/config/train_keys.hpp"

namespace lbt::experiments {
namespace {

const KeySpec& key(std::string_view name) {
  return Schema::in(sweep_keys(), name);
}

std::string key_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// "B twice" for a batch size listed twice. A repeat is a typo more often than not (256, 256
// for 256, 512): the sweep would train it once and lack the batch size meant.
std::optional<std::string> repeated_batch_size(std::vector<std::int64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  const auto repeat = std::adjacent_find(sizes.begin(), sizes.end());
  if (repeat == sizes.end()) return std::nullopt;
  return std::to_string(*repeat) + " twice";
}

// The sweep.* keys (and the trial keys the sweep needs) as read; --batch-sizes, --lr-trials and
// --target win over their keys.

// sweep.slurm_*, as sbatch reads them: they went into sweep.sbatch unchecked (--cpus-per-task=-3,
// --time=abc, an "#SBATCH bad option" line), and sbatch refused the script at submission.
bool slurm_time(const std::string& t) {  // [D-]M | M:S | H:M:S, D-H | D-H:M, or UNLIMITED
  if (t == "UNLIMITED" || t == "INFINITE") return true;
  const std::size_t dash = t.find('-');
  const std::string clock = dash == std::string::npos ? t : t.substr(dash + 1);
  if (dash != std::string::npos && (dash == 0 || t.find_first_not_of("0123456789") != dash))
    return false;
  int fields = 0;
  for (std::size_t from = 0;; ++fields) {
    const std::size_t colon = clock.find(':', from);
    const std::string part = clock.substr(from, colon == std::string::npos ? colon : colon - from);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return false;
    if (colon == std::string::npos) return fields < 3;
    from = colon + 1;
  }
}

void check_slurm_settings(const Config& c, const SweepSettings& s) {
  if (!slurm_time(s.slurm_time))
    c.fail("sweep.slurm_time", "a SLURM time limit (MINUTES, HH:MM:SS, D-HH:MM:SS, UNLIMITED)",
           "\"" + s.slurm_time + "\"", "e.g. sweep.slurm_time=\"02:00:00\"");
  if (s.slurm_cpus_per_task < 1)
    c.fail("sweep.slurm_cpus_per_task", ">= 1", std::to_string(s.slurm_cpus_per_task));
  for (const std::string& o : s.slurm_options)
    if (o.rfind("-", 0) != 0)
      c.fail("sweep.slurm_options",
             "sbatch options, each starting with - (e.g. \"--partition=gpu\")", "\"" + o + "\"");
}

SweepSettings read_settings(Config& c, const std::vector<std::int64_t>& batch_sizes, int lr_trials,
                            const std::string& target) {
  SweepSettings s;
  s.batch_sizes = c.get_int_list(key("sweep.batch_sizes"));
  if (!batch_sizes.empty()) {
    if (const auto twice = repeated_batch_size(batch_sizes))
      throw ConfigError("--batch-sizes must be distinct values, got " + *twice,
                        "remove the repeat");
    s.batch_sizes = batch_sizes;
  }
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
  s.eval_growth = c.get_double(key("sweep.eval_growth"));
  s.seeds = static_cast<int>(c.get_int(key("sweep.seeds")));
  s.base_seed = c.get_int(Schema::in(trainer::train_keys(), "train.seed"));
  if (s.lr_search == "adaptive") {
    s.search.refine_ratio = c.get_double(key("sweep.lr_refine_ratio"));
    s.search.max_trials = static_cast<int>(c.get_int(key("sweep.lr_max_trials")));
    s.search.prune = c.get_bool(key("sweep.prune"));
  }
  s.trial_timeout = c.get_double(key("sweep.trial_timeout"));
  s.slurm_time = c.get_string(key("sweep.slurm_time"));
  s.slurm_cpus_per_task = c.get_int(key("sweep.slurm_cpus_per_task"));
  s.slurm_options = c.get_string_list(key("sweep.slurm_options"));
  check_slurm_settings(c, s);
  s.adaptive = c.get_bool(key("sweep.adaptive"));
  s.adaptive_rule = c.get_string(key("sweep.adaptive_rule"));
  s.adaptive_sqrt_scale = c.get_double(key("sweep.adaptive_sqrt_scale"));
  s.target =
      target.empty() ? c.get_string(Schema::in(trainer::train_keys(), "train.target")) : target;
  s.base_lr = c.get_double(Schema::in(optim::optimizer_keys(), "optimizer.lr"));
  const schedules::ScheduleOptions schedule = trainer::read_run_schedule(c);
  s.scaling = schedule.scaling;
  s.reference_batch = schedule.reference_batch;

  return s;
}

// Positive batch sizes, each once (a repeat is refused), sorted.
void check_batch_sizes(const Config& c, SweepSettings& s) {
  if (s.batch_sizes.empty()) {
    throw ConfigError("a sweep needs batch sizes",
                      "pass --batch-sizes 16,32,...,4096 or set sweep.batch_sizes");
  }
  for (auto b : s.batch_sizes) {
    if (b <= 0) c.fail("sweep.batch_sizes", "positive", std::to_string(b));
  }
  std::sort(s.batch_sizes.begin(), s.batch_sizes.end());
  if (const auto twice = repeated_batch_size(s.batch_sizes))
    c.fail("sweep.batch_sizes", "distinct values", *twice, "remove the repeat");
}

// The LR search: its kind, grid, factors and momentum range. The multipliers, when given, fix
// the number of LR trials.
void check_lr_search(const Config& c, SweepSettings& s, int lr_trials) {
  if (s.lr_search != "adaptive" && s.lr_search != "grid" && s.lr_search != "log_uniform") {
    c.fail("sweep.lr_search", "one of: adaptive, grid, log_uniform", "'" + s.lr_search + "'");
  }
  if (!(s.search.refine_ratio > 1.0) || !std::isfinite(s.search.refine_ratio)) {
    c.fail("sweep.lr_refine_ratio", "> 1", key_number(s.search.refine_ratio),
           "e.g. 1.4142 (neighbouring LRs at most 2^(1/2) apart)");
  }
  if (s.seeds < 1) c.fail("sweep.seeds", ">= 1", std::to_string(s.seeds), "e.g. 3");
  if (!(s.eval_growth >= 1.0))
    c.fail("sweep.eval_growth", ">= 1", key_number(s.eval_growth), "e.g. 1.5");
  // Before the multipliers, which fix the count: 0 beside them got "must be the number of
  // sweep.lr_multipliers", as if any count but 0 would do.
  if (s.lr_trials < 1) c.fail("sweep.lr_trials", ">= 1", std::to_string(s.lr_trials));
  if (s.lr_search != "log_uniform" && !s.lr_multipliers.empty()) {
    for (std::size_t i = 0; i < s.lr_multipliers.size(); ++i) {
      const double m = s.lr_multipliers[i];
      if (!(m > 0)) c.fail("sweep.lr_multipliers", "all > 0", key_number(m));
      // One LR twice trained the same trial twice (its seed too): not more seeds.
      if (std::count(s.lr_multipliers.begin(), s.lr_multipliers.begin() + i, m) > 0)
        c.fail("sweep.lr_multipliers", "distinct values", key_number(m) + " twice",
               "remove the repeat (sweep.seeds gives the best LR more seeds)");
    }
    if (lr_trials > 0 && lr_trials != static_cast<int>(s.lr_multipliers.size())) {
      throw ConfigError("--lr-trials " + std::to_string(lr_trials) + " disagrees with the " +
                            std::to_string(s.lr_multipliers.size()) + " sweep.lr_multipliers",
                        "drop --lr-trials, or --set sweep.lr_multipliers=[] to derive a grid");
    }
    const std::optional<std::int64_t> set = c.peek_int("sweep.lr_trials");  // ignored before
    if (lr_trials <= 0 && set && *set != static_cast<std::int64_t>(s.lr_multipliers.size())) {
      c.fail("sweep.lr_trials",
             "the number of sweep.lr_multipliers (" + std::to_string(s.lr_multipliers.size()) +
                 ") where both are set",
             std::to_string(*set), "drop one: the multipliers are the grid");
    }
    s.lr_trials = static_cast<int>(s.lr_multipliers.size());
  }
  if (s.search.max_trials < s.lr_trials) {
    c.fail("sweep.lr_max_trials",
           ">= the starting grid's " + std::to_string(s.lr_trials) + " trials",
           std::to_string(s.search.max_trials));
  }
  // Each range names the bound that is wrong (a bad momentum_max was reported as momentum_min
  // with momentum_min's value, 2026-11-30 audit).
  if (!(s.lr_min_factor > 0)) c.fail("sweep.lr_min_factor", "> 0", key_number(s.lr_min_factor));
  if (!(s.lr_max_factor >= s.lr_min_factor)) {
    c.fail("sweep.lr_max_factor", ">= sweep.lr_min_factor = " + key_number(s.lr_min_factor),
           key_number(s.lr_max_factor));
  }
  if (!s.search_momentum) return;
  if (!(0 <= s.momentum_min && s.momentum_min < 1))
    c.fail("sweep.momentum_min", "in [0, 1)", key_number(s.momentum_min));
  if (!(s.momentum_min < s.momentum_max && s.momentum_max < 1)) {
    c.fail("sweep.momentum_max", "in (sweep.momentum_min = " + key_number(s.momentum_min) + ", 1)",
           key_number(s.momentum_max));
  }
}

// Every trial needs a step budget and a target to measure steps-to-result against.
void check_budget_and_target(const Config& c, const SweepSettings& s) {
  if (s.max_examples < 0) c.fail("sweep.max_examples", ">= 0", std::to_string(s.max_examples));
  if (s.max_steps < 0) c.fail("sweep.max_steps", ">= 0", std::to_string(s.max_steps));
  if (!std::isfinite(s.trial_timeout))
    c.fail("sweep.trial_timeout", "a number of seconds", key_number(s.trial_timeout), "e.g. 3600");
  if (s.max_examples == 0 && s.max_steps == 0) {
    throw ConfigError("a sweep needs a step budget per trial",
                      "set sweep.max_examples (e.g. 20 epochs' worth) and/or sweep.max_steps");
  }
  if (s.eval_every_examples < 0)
    c.fail("sweep.eval_every_examples", ">= 0", std::to_string(s.eval_every_examples));
  trainer::parse_target(s.target);  // validates
  if (s.target.empty() || s.target == "none") {
    throw ConfigError("a sweep needs a target: steps-to-result is measured against it",
                      "pass --target \"val_accuracy>=0.85\" or set train.target in the config");
  }
}

}  // namespace

SweepSettings read_sweep_settings(Config& c, const std::vector<std::int64_t>& batch_sizes,
                                  int lr_trials, const std::string& target) {
  SweepSettings s = read_settings(c, batch_sizes, lr_trials, target);
  check_batch_sizes(c, s);
  check_lr_search(c, s, lr_trials);
  check_budget_and_target(c, s);
  if (s.adaptive && s.adaptive_rule == "sqrt" && !(s.adaptive_sqrt_scale > 0.0))
    c.fail("sweep.adaptive_sqrt_scale", "> 0 with sweep.adaptive_rule = \"sqrt\"",
           key_number(s.adaptive_sqrt_scale), "e.g. --set sweep.adaptive_sqrt_scale=512");
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

std::int64_t trial_steps(std::int64_t max_examples, std::int64_t max_steps, std::int64_t B) {
  std::int64_t steps = 0;
  if (max_examples > 0) steps = (max_examples + B - 1) / B;
  if (max_steps > 0) steps = steps > 0 ? std::min(steps, max_steps) : max_steps;
  return std::max<std::int64_t>(steps, 1);
}

Trial make_trial(const SweepSettings& s, std::int64_t B, int k, double multiplier, double momentum,
                 int seed, std::int64_t prune_at_step) {
  const std::int64_t steps = trial_steps(s.max_examples, s.max_steps, B);
  Trial t;
  t.name = std::to_string(B) + "_" + std::to_string(k);
  t.batch_size = B;
  t.k = k;
  t.multiplier = multiplier;
  t.lr = lr_prior(s, B) * multiplier;
  t.momentum = momentum;
  t.seed = seed;
  t.prune_at_step = prune_at_step;
  t.steps = steps;
  // Evaluations at least eval_every_examples apart (the same resolution in examples at every
  // B), spaced geometrically after that; the trainer refines the crossing's bracket to
  // train.target_resolution of the steps.
  t.eval_every = std::max<std::int64_t>(1, s.eval_every_examples / B);
  // The trial is the base run at batch B: its schedule scales the LR by the same rule from the
  // same reference batch (pinned, since B is now its train.global_batch).
  t.overrides = {"train.global_batch=" + std::to_string(B),
                 "optimizer.lr=" + shortest_text(s.base_lr * multiplier),
                 "schedule.reference_batch=" + std::to_string(s.reference_batch),
                 "train.steps=" + std::to_string(steps),
                 "train.eval_every=" + std::to_string(t.eval_every),
                 "train.eval_growth=" + shortest_text(s.eval_growth),
                 "train.target=" + s.target,
                 "train.stop_at_target=true"};
  if (momentum >= 0) t.overrides.push_back("optimizer.momentum=" + shortest_text(momentum));
  if (seed > 0) t.overrides.push_back("train.seed=" + std::to_string(s.base_seed + seed));
  if (prune_at_step > 0)
    t.overrides.push_back("train.prune_at_step=" + std::to_string(prune_at_step));
  return t;
}

// The bounds are the smallest and largest batch sizes, the micro-batch half the smallest (one
// process: two_batch needs k >= 2 micro-batches; trial validation refuses a bound it does not
// divide); the budget counts examples at the smallest batch (adaptive_batch.hpp); evaluations
// every sweep.eval_every_examples at the smallest batch, not growing, so steps-to-target's
// resolution is eval_every steps (the adaptive crossing is not refined).
Trial make_adaptive_trial(const SweepSettings& s, int seed) {
  const std::int64_t lo = s.batch_sizes.front(), hi = s.batch_sizes.back();
  const std::int64_t micro = lo % 2 == 0 ? lo / 2 : lo;
  Trial t = make_trial(s, lo, 0, 1.0, -1.0, seed, 0);
  t.name = "adaptive_" + std::to_string(seed);
  t.batch_size = 0;
  t.adaptive = true;
  t.overrides = {"train.batch_schedule=adaptive",
                 "train.batch_min=" + std::to_string(lo),
                 "train.batch_max=" + std::to_string(hi),
                 "train.micro_batch=" + std::to_string(micro),
                 "train.batch_rule=" + s.adaptive_rule,
                 "optimizer.lr=" + shortest_text(s.base_lr),
                 "schedule.reference_batch=" + std::to_string(s.reference_batch),
                 "train.steps=" + std::to_string(t.steps),
                 "train.eval_every=" + std::to_string(t.eval_every),
                 "train.eval_growth=1",
                 "train.log_every=1",
                 "noise.enabled=true",
                 "train.target=" + s.target,
                 "train.stop_at_target=true"};
  if (s.adaptive_rule == "sqrt")
    t.overrides.push_back("train.batch_sqrt_scale=" + shortest_text(s.adaptive_sqrt_scale));
  if (seed > 0) t.overrides.push_back("train.seed=" + std::to_string(s.base_seed + seed));
  return t;
}

std::vector<Trial> make_plan(const SweepSettings& s) {
  // Multipliers of the prior, shared by every batch size so trials are comparable across B.
  std::vector<double> factors, momenta;
  const double lo = std::log(s.lr_min_factor), hi = std::log(s.lr_max_factor);
  for (int k = 0; k < s.lr_trials; ++k) {
    double f;
    if (s.lr_search != "log_uniform") {
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
    for (int k = 0; k < s.lr_trials; ++k) {
      plan.push_back(make_trial(s, B, k, factors[k], momenta[k]));
      plan.back().index = static_cast<int>(plan.size()) - 1;
    }
  }
  for (int seed = 0; s.adaptive && seed < s.seeds; ++seed) {
    plan.push_back(make_adaptive_trial(s, seed));
    plan.back().index = static_cast<int>(plan.size()) - 1;
  }
  return plan;
}

}  // namespace lbt::experiments
