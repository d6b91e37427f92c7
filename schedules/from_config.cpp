// Schedule from typed options; see from_config.hpp. Names map to builders through the tables
// of schedule_kinds.hpp (one registry: add a row, not a branch). The options were read through
// Config getters (schedules/schedule_options.cpp), so `--help` lists the keys and unknown ones are
// caught there; here they are checked against the run, a builder's std::invalid_argument a
// ConfigError naming the key.
#include "schedules/from_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "schedules/decay.hpp"
#include "schedules/scaling.hpp"
#include "schedules/schedule_kinds.hpp"
#include "schedules/warmup.hpp"

namespace lbt::schedules {
namespace {

using namespace detail;

constexpr double kMaxSteps = 1e12;  // guards the double -> int64 conversion of lengths

struct Converter {
  const Failer& config;
  std::int64_t steps_per_epoch;  // 0: unknown
  std::int64_t global_batch;     // 0: unknown

  // `value` in `unit` -> whole steps, rounded up (so a length in samples covers at least that
  // many samples at any batch size).
  std::int64_t to_steps(const char* key, double value, Unit unit, const char* unit_key) const {
    if (!std::isfinite(value) || value < 0) {
      config.fail(key, "a finite number >= 0", num(value));
    }
    double steps = value;
    if (unit == Unit::kEpochs) {
      if (steps_per_epoch <= 0) {
        config.fail(unit_key, "known steps per epoch to use \"epochs\"", "no steps per epoch",
                    "lbt schedule: pass --steps-per-epoch N (or set schedule.steps_per_epoch)");
      }
      steps = value * double(steps_per_epoch);
    } else if (unit == Unit::kSamples) {
      if (global_batch <= 0) {
        config.fail(unit_key, "used with a known global batch for \"samples\"", "no global batch",
                    "set train.global_batch");
      }
      steps = value / double(global_batch);
    }
    if (steps > kMaxSteps) config.fail(key, "at most 1e12 steps", num(steps));
    return static_cast<std::int64_t>(std::ceil(steps - 1e-9));
  }
};

void warn(const ScheduleContext& context, const std::string& message) {
  if (context.warnings) *context.warnings << "warning: " << message << "\n";
}

void require(const Failer& config, bool ok, const char* key, const char* constraint, double got) {
  if (!ok) config.fail(key, constraint, num(got));
}

// The named parts the options pick, looked up once (an unknown name fails here).
struct Kinds {
  s::ScalingRule rule;
  Unit warmup_unit;
  const WarmupKind& warmup;
  const DecayKind& decay;
  Unit decay_unit;
  const CooldownKind& cooldown;
};

Kinds look_up_kinds(const Failer& config, const ScheduleOptions& o) {
  const s::ScalingRule rule = s::scaling_rule(o.scaling);  // the schema checked the name
  const Unit w_unit = lookup(config, "schedule.warmup_unit", o.warmup_unit, kUnits).unit;
  const auto& warmup = lookup(config, "schedule.warmup_kind", o.warmup_kind, kWarmups);
  const auto& decay = lookup(config, "schedule.decay", o.decay, decay_kinds());
  const Unit d_unit = lookup(config, "schedule.decay_unit", o.decay_unit, kUnits).unit;
  const auto& cooldown = lookup(config, "schedule.cooldown_shape", o.cooldown_shape, kCooldowns);
  return {rule, w_unit, warmup, decay, d_unit, cooldown};
}

// Each number in its range, before anything is built from it.
void check_values(const Failer& config, const ScheduleOptions& o, const ScheduleContext& context) {
  if (!std::isfinite(context.base_lr)) {
    config.fail("optimizer.lr", "finite", num(context.base_lr));
  }
  // A warmup climbs to the peak and a decay falls from it: a start or an end above the peak,
  // or a factor above 1, would make either run backwards.
  require(config, o.warmup_start >= 0 && o.warmup_start <= 1, "schedule.warmup_start",
          "in [0, 1] (a fraction of the peak)", o.warmup_start);
  require(config, o.gamma > 0 && o.gamma <= 1, "schedule.gamma", "in (0, 1]", o.gamma);
  require(config, std::isfinite(o.power) && o.power > 0, "schedule.power", "> 0", o.power);
  require(config, std::isfinite(o.rate) && o.rate >= 0, "schedule.rate", ">= 0", o.rate);
  require(config, o.final_frac >= 0 && o.final_frac <= 1, "schedule.final_frac",
          "in [0, 1] (a fraction of the peak)", o.final_frac);
  require(config, o.cooldown_frac > 0 && o.cooldown_frac <= 1, "schedule.cooldown_frac",
          "in (0, 1]", o.cooldown_frac);
  require(config, std::isfinite(o.min_lr) && o.min_lr >= 0, "schedule.min_lr", ">= 0", o.min_lr);
  require(config, o.decay_start == -1.0 || o.decay_start >= 0, "schedule.decay_start",
          ">= 0, or -1 for 'where the warmup ends'", o.decay_start);
}

// The warmup's start is given one way at most, and a geometric warmup starts above 0.
void check_warmup_start(const Failer& config, const ScheduleOptions& o, const WarmupKind& warmup) {
  if (o.warmup_start_lr != -1.0) {
    require(config, std::isfinite(o.warmup_start_lr) && o.warmup_start_lr >= 0,
            "schedule.warmup_start_lr", ">= 0, or -1 to use schedule.warmup_start",
            o.warmup_start_lr);
    if (o.warmup_start_given) {
      config.fail("schedule.warmup_start_lr", "unset when schedule.warmup_start is set",
                  num(o.warmup_start_lr), "give the start as a fraction or as an LR, not both");
    }
  }
  // From the base LR it starts at optimizer.lr (> 0; it was refused, 2026-11-29 audit). The
  // error names the key the start was given by.
  if (warmup.build == &s::warmup_exponential && o.warmup > 0 && !(o.warmup_start > 0) &&
      !(o.warmup_start_lr > 0) && !o.warmup_from_base_lr) {
    const bool as_lr = o.warmup_start_lr != -1.0;
    config.fail(as_lr ? "schedule.warmup_start_lr" : "schedule.warmup_start",
                "> 0 for warmup_kind = \"exponential\"",
                num(as_lr ? o.warmup_start_lr : o.warmup_start),
                "start the geometric rise somewhere, e.g. schedule.warmup_start = 0.01");
  }
  // Goyal et al.'s constant warmup trains at the unscaled LR; at 0 its steps train nothing.
  if (warmup.build == &s::warmup_constant && o.warmup > 0 && !(o.warmup_start > 0) &&
      !(o.warmup_start_lr > 0) && !o.warmup_from_base_lr) {
    config.fail("schedule.warmup_start", "> 0 for warmup_kind = \"constant\"", num(o.warmup_start),
                "at LR 0 the warmup's steps train nothing: set schedule.warmup_from_base_lr = "
                "true (Goyal et al.: the unscaled optimizer.lr) or schedule.warmup_start");
  }
}

// The scaling rule's factor at this run's global batch (1 with no rule and no LEGW).
double scaling_factor_of(const Failer& config, const ScheduleOptions& o,
                         const ScheduleContext& context, s::ScalingRule rule) {
  if (rule == s::ScalingRule::kNone && !o.warmup_legw) return 1.0;
  if (context.global_batch <= 0) {
    config.fail("train.global_batch", "> 0 to apply schedule.scaling or warmup_legw",
                std::to_string(context.global_batch));
  }
  if (o.reference_batch <= 0) {
    config.fail("schedule.reference_batch", "> 0", std::to_string(o.reference_batch),
                "set it to the global batch at which optimizer.lr was tuned");
  }
  return s::scaling_factor(rule, context.global_batch, o.reference_batch);
}

// The warmup's start as a fraction of the peak (the schedule is built at unit peak, so an
// absolute start becomes a fraction of the peak).
double warmup_start_fraction(const Failer& config, const ScheduleOptions& o, double base_lr,
                             double peak) {
  if (o.warmup_from_base_lr && (o.warmup_start_given || o.warmup_start_lr != -1.0)) {
    config.fail("schedule.warmup_from_base_lr", "false when warmup_start or warmup_start_lr is set",
                "true", "give the warmup's start one way");
  }
  // Goyal et al.'s warmup climbs from eta to k eta; at or below the reference batch (k <= 1)
  // there is nothing to climb, so the LR is flat at the peak rather than falling to it.
  return o.warmup_from_base_lr       ? (peak != 0.0 ? std::min(1.0, base_lr / peak) : 0.0)
         : o.warmup_start_lr == -1.0 ? o.warmup_start
         : peak != 0.0               ? o.warmup_start_lr / peak
                                     : 0.0;
}

// The schedule's lengths in whole steps.
struct Lengths {
  std::int64_t warmup = 0;       // W: warmup steps
  std::int64_t decay_start = 0;  // S: the decay's first step (W unless given)
  std::int64_t decay = 0;        // D: decay steps (the rest of the run unless given)
  bool decay_given = false;
};

Lengths resolve_lengths(const Failer& config, const ScheduleOptions& o,
                        const ScheduleContext& context, const Kinds& kinds,
                        const Converter& convert) {
  double warmup_amount = o.warmup;
  if (o.warmup_legw) {
    if (kinds.warmup_unit == Unit::kSteps) {
      config.fail("schedule.warmup_unit", "\"epochs\" or \"samples\" with warmup_legw = true",
                  "\"steps\"", "LEGW grows the warmup's epochs with the batch; give it in epochs");
    }
    warmup_amount = s::legw_warmup_epochs(o.warmup, context.global_batch, o.reference_batch);
  }
  Lengths l;
  l.warmup =
      convert.to_steps("schedule.warmup", warmup_amount, kinds.warmup_unit, "schedule.warmup_unit");
  l.decay_start = o.decay_start < 0 ? l.warmup
                                    : convert.to_steps("schedule.decay_start", o.decay_start,
                                                       kinds.decay_unit, "schedule.decay_unit");
  l.decay_given = o.decay_length > 0;
  l.decay = l.decay_given ? convert.to_steps("schedule.decay_length", o.decay_length,
                                             kinds.decay_unit, "schedule.decay_unit")
                          : std::max<std::int64_t>(context.total_steps - l.decay_start, 0);
  // A warmup that outlasts the run leaves the decay after its end, where its length changes no
  // step: check_against_run says what the warmup does. A decay to the end failed here on a
  // decay_length never set (lbt schedule's warning, then that error; 2026-11-29 audit).
  if (!l.decay_given && o.decay_start < 0 && context.total_steps > 0 &&
      l.warmup >= context.total_steps)
    l.decay = 1;
  return l;
}

// The decay builder's inputs in steps; milestones must increase strictly after conversion.
DecayInputs decay_inputs(const Failer& config, const ScheduleOptions& o, const Kinds& kinds,
                         const Lengths& l, const Converter& convert) {
  DecayInputs in{config,
                 l.warmup,
                 l.decay_start,
                 l.decay,
                 l.decay_given,
                 convert.to_steps("schedule.decay_every", o.decay_every, kinds.decay_unit,
                                  "schedule.decay_unit"),
                 {},
                 o.gamma,
                 o.power,
                 o.rate,
                 o.final_frac,
                 o.cooldown_frac,
                 o.staircase,
                 kinds.cooldown.shape};
  for (double m : o.milestones) {
    in.milestones.push_back(
        convert.to_steps("schedule.milestones", m, kinds.decay_unit, "schedule.decay_unit"));
  }
  for (std::size_t i = 0; i < in.milestones.size(); ++i) {
    if (in.milestones[i] <= (i == 0 ? 0 : in.milestones[i - 1])) {
      config.fail("schedule.milestones", "> 0 and strictly increasing (in steps, after conversion)",
                  "milestone " + std::to_string(i) + " at step " + std::to_string(in.milestones[i]),
                  "sort the milestones and remove duplicates");
    }
  }
  return in;
}

// Past the end of the run: a warmup that never ends is an error where it would change the
// LR of a training run (see WarmupPastRun), otherwise a note; a decay that never ends a note.
void check_against_run(const Failer& config, const ScheduleOptions& o,
                       const ScheduleContext& context, const Lengths& l, double start) {
  if (context.total_steps <= 0) return;
  const std::string run_steps = "the run's " + std::to_string(context.total_steps) + " steps";
  // lr(W) = peak, and the run's last step is total - 1: a warmup of W >= total never gets there.
  if (l.warmup >= context.total_steps) {
    const bool climbs = start != 1.0;
    const std::string given =
        o.warmup_unit == "steps" ? "" : " (" + num(o.warmup) + " " + o.warmup_unit + ")";
    if (climbs && context.warmup_past_run == WarmupPastRun::kError) {
      config.fail("schedule.warmup",
                  "fewer steps than " + run_steps + " (the LR reaches its peak at step W)",
                  std::to_string(l.warmup) + " steps" + given,
                  "shorten schedule.warmup, or lengthen train.steps / train.epochs");
    }
    if (context.warnings) {
      *context.warnings << (climbs ? "warning: " : "note: ") << "the warmup's " << l.warmup
                        << (l.warmup > context.total_steps ? " steps outlast " : " steps last ")
                        << run_steps
                        << (climbs ? std::string(": the LR ") + (start < 1.0 ? "climbs" : "falls") +
                                         " for the whole run and never reaches its peak"
                                   : "; at this batch the warmup climbs nothing (the LR starts "
                                     "at its peak)")
                        << "\n";
    }
  }
  if (l.decay_given && l.decay_start + l.decay > context.total_steps) {
    warn(context, "the decay ends at step " + std::to_string(l.decay_start + l.decay) + ", after " +
                      run_steps + ": the LR will not reach its final value");
  }
}

// A decay that starts inside the warmup keeps its own clock from decay_start: a milestone there
// takes effect only at the warmup's end (a drop at 200 moved to 390 without a word); one past
// the run's end never drops the LR (taken without a word, 2026-11-30 audit). They increase.
void check_milestones(const ScheduleContext& context, const DecayInputs& in, const Lengths& l) {
  if (in.milestones.empty()) return;
  const std::int64_t last = l.decay_start + in.milestones.back();
  if (context.total_steps > 0 && last >= context.total_steps) {
    warn(context, "the decay's milestone at step " + std::to_string(last) +
                      " falls after the run's " + std::to_string(context.total_steps) +
                      " steps: it never takes effect");
  }
  const std::int64_t first = l.decay_start + in.milestones.front();
  if (first >= l.warmup) return;
  warn(context, "the decay's milestone at step " + std::to_string(first) +
                    " falls inside the warmup (" + std::to_string(l.warmup) +
                    " steps): it takes effect at step " + std::to_string(l.warmup) +
                    ", where the warmup ends");
}

// An absolute start or floor above this batch's peak turns the warmup or the whole schedule
// around; a warning, since with lbt schedule -b or a sweep another batch may be fine.
void check_against_peak(const ScheduleContext& context, const ScheduleOptions& o, const Lengths& l,
                        double start, double peak) {
  if (l.warmup > 0 && start > 1.0) {
    warn(context, "schedule.warmup_start_lr " + num(start * peak) + " is above the peak LR " +
                      num(peak) + ": the warmup falls to the peak");
  }
  if (o.min_lr > peak) {
    warn(context, "schedule.min_lr " + num(o.min_lr) + " is above the peak LR " + num(peak) +
                      ": the LR is min_lr throughout");
  }
}

// The plot's marks: the warmup's end, then a step or multistep decay's drops where they fall (a
// milestone inside the warmup at its end; at most 20), or a smooth decay's start and end. The
// goyal recipe's decay, whose clock starts at step 0, was marked "decay start" at epoch 0,
// before the warmup's end, and its drops not at all (2026-11-29 audit).
void mark_boundaries(const ScheduleContext& context, const DecayKind& decay, const Lengths& l,
                     const DecayInputs& in) {
  if (!context.boundaries) return;
  auto& marks = *context.boundaries;
  const std::int64_t W = l.warmup, S = l.decay_start, D = l.decay, end = context.total_steps;
  if (W > 0) marks.emplace_back("warmup end", W);
  const std::string_view name = decay.name;
  if (name == "constant") return;
  if (name == "multistep" || name == "step") {
    std::vector<std::int64_t> drops = in.milestones;
    for (std::int64_t k = 1; name == "step" && in.every > 0 && drops.size() < 20; ++k) {
      if (S + k * in.every >= end) break;
      drops.push_back(k * in.every);
    }
    for (std::int64_t m : drops)
      if (S + m < end && marks.size() < 21) marks.emplace_back("drop", std::max(S + m, W));
    return;
  }
  if (S > W) marks.emplace_back("decay start", S);
  if (D > 0 && S + D <= end) marks.emplace_back("decay end", S + D);
}

// join(warmup, [hold at peak], decay) at unit peak, then scaled to the peak and clamped below
// by min_lr.
Schedule compose(const Failer& config, const ScheduleOptions& o, const Kinds& kinds,
                 const DecayInputs& in, const Lengths& l, double start, double peak) {
  const std::int64_t W = l.warmup, S = l.decay_start;
  try {
    s::Schedule decay_part = kinds.decay.build(in);
    std::vector<s::Schedule> parts;
    std::vector<std::int64_t> boundaries;
    if (W > 0) parts.push_back(kinds.warmup.build(start, 1.0, W));
    if (S > W) {
      if (W > 0) boundaries.push_back(W);
      parts.push_back(s::constant(1.0));
    } else if (S < W) {
      decay_part = s::shifted(std::move(decay_part), W - S);  // the decay keeps its own clock
    }
    if (!parts.empty()) boundaries.push_back(std::max(S, W));
    parts.push_back(std::move(decay_part));
    s::Schedule schedule = s::scaled(s::join(std::move(parts), std::move(boundaries)), peak);
    if (o.min_lr > 0)
      schedule = s::clamp(std::move(schedule), o.min_lr, std::numeric_limits<double>::infinity());
    return schedule;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const char* key = what.rfind("warmup", 0) == 0 ? "schedule.warmup_kind" : "schedule.decay";
    config.fail(key, "a valid schedule", what, "check the schedule.* values named in the message");
  }
}

// The run's steps per epoch wins over schedule.steps_per_epoch (with a note when they differ).
std::int64_t steps_per_epoch_of(const ScheduleOptions& o, const ScheduleContext& context) {
  if (context.steps_per_epoch > 0 && o.steps_per_epoch > 0 &&
      o.steps_per_epoch != context.steps_per_epoch) {
    warn(context, "schedule.steps_per_epoch = " + std::to_string(o.steps_per_epoch) +
                      " ignored: the run has " + std::to_string(context.steps_per_epoch) +
                      " steps per epoch");
  }
  return context.steps_per_epoch > 0 ? context.steps_per_epoch : o.steps_per_epoch;
}

}  // namespace

Schedule make_schedule(const ScheduleOptions& o, const ScheduleContext& context) {
  const Failer config{o.source, &o.set_on_command_line};
  const Kinds kinds = look_up_kinds(config, o);
  check_values(config, o, context);
  check_warmup_start(config, o, kinds.warmup);
  const double peak = context.base_lr * scaling_factor_of(config, o, context, kinds.rule);
  // optimizer.lr = 1e308 at 16x the reference batch: "schedule.decay must be a valid schedule,
  // got scaled: factor must be finite" named a key no one set (2026-11-29 audit).
  if (!std::isfinite(peak)) {
    config.fail("optimizer.lr", "finite once scaled to this batch (the peak LR)",
                num(context.base_lr) + " x " + num(peak / context.base_lr) + " = " + num(peak),
                "lower optimizer.lr");
  }
  const double start = warmup_start_fraction(config, o, context.base_lr, peak);
  const Converter convert{config, steps_per_epoch_of(o, context), context.global_batch};
  const Lengths lengths = resolve_lengths(config, o, context, kinds, convert);
  const DecayInputs in = decay_inputs(config, o, kinds, lengths, convert);
  check_against_run(config, o, context, lengths, start);
  check_against_peak(context, o, lengths, start, peak);
  check_milestones(context, in, lengths);
  mark_boundaries(context, kinds.decay, lengths, in);
  return compose(config, o, kinds, in, lengths, start, peak);
}

}  // namespace lbt::schedules
