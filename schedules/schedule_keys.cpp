// The schedule.* key table; see schedule_keys.hpp.
#include "schedules/schedule_keys.hpp"

#include "core/config.hpp"

namespace lbt::schedules {
namespace {

std::vector<std::string> decay_kind(const Config& config) {
  return {config.peek_string("schedule.decay", "constant")};
}
const KeyCondition kByDecay{{"schedule.decay"}, decay_kind};
// decay_start beside decay = "constant" started nothing, without a word (2026-11-30 audit); it is
// read under every decay, so its default passes (resolved configs hold it).
const KeyCondition kByDecayReadAlways{{"schedule.decay"}, decay_kind, {}, true};

// A warmup's shape and start beside schedule.warmup = 0 shaped nothing, without a word (the
// 2026-11-30 config audit). Read either way, so the defaults pass. The unit, like decay_unit,
// stays free: it is how a length is written, not a setting of the warmup.
std::vector<std::string> warmup_length(const Config& config) {
  return {config.peek_number("schedule.warmup").value_or(0.0) > 0 ? "> 0" : "0"};
}
const KeyCondition kByWarmup{{"schedule.warmup"}, warmup_length, {}, true};

}  // namespace

const std::vector<KeySpec>& schedule_keys() {
  using enum KeyType;
  const KeyCondition* decay = &kByDecay;
  const KeyCondition* warmup = &kByWarmup;
  const std::vector<std::string> with_warmup = {"> 0"};
  const std::vector<std::string> units = {"steps", "epochs", "samples"};
  // clang-format off
  static const std::vector<KeySpec> keys = {
      {"schedule.recipe", kString, "\"none\"",
       "a published schedule filling the schedule keys left unset (docs/schedules.md, section Schedule recipes)",
       {"none", "goyal", "lars", "legw", "cosine", "wsd"}},
      {"schedule.scaling", kString, "\"none\"",
       "LR scaling rule, the only one in lbt: peak LR = optimizer.lr x rule(global_batch / reference_batch); the sweep's LR prior uses it too",
       {"none", "linear", "sqrt"}},
      {"schedule.reference_batch", kInt, "train.global_batch",
       "global batch at which optimizer.lr was tuned (default: the config file's own train.global_batch, from which lbt schedule -b, a sweep's trials and --set train.global_batch scale)",
       {}, "examples"},
      {"schedule.steps_per_epoch", kInt, "0",
       "steps per epoch for lbt schedule without data (0: from the dataset, as the trainer counts)",
       {}, "steps"},
      {"schedule.warmup", kNumber, "0.0", "warmup length (0: no warmup)", {},
       "schedule.warmup_unit"},
      {"schedule.warmup_unit", kString, "\"steps\"",
       "unit of schedule.warmup (rounded up to whole steps)", units},
      {"schedule.warmup_kind", kString, "\"linear\"", "shape of the warmup",
       {"linear", "constant", "exponential", "quadratic"}, "", warmup, with_warmup},
      {"schedule.warmup_start", kNumber, "0.0",
       "LR at step 0 as a fraction of the peak (exponential needs > 0; Goyal et al.: 1 / k)", {},
       "", warmup, with_warmup},
      {"schedule.warmup_start_lr", kNumber, "-1.0",
       "LR at step 0, absolute (-1: use warmup_start); Goyal et al.: = optimizer.lr", {}, "",
       warmup, with_warmup},
      {"schedule.warmup_from_base_lr", kBool, "false",
       "start the warmup at optimizer.lr, unscaled (Goyal et al.'s gradual warmup from eta to k eta; flat where k <= 1)",
       {}, "", warmup, with_warmup},
      {"schedule.warmup_legw", kBool, "false",
       "LEGW (You et al. 2019): warmup length x global_batch / reference_batch (epochs or samples)",
       {}, "", warmup, with_warmup},
      {"schedule.decay", kString, "\"constant\"", "the decay after the warmup",
       {"constant", "step", "multistep", "exponential", "inverse_time", "polynomial", "cosine", "linear", "inverse_sqrt", "wsd"}},
      {"schedule.decay_unit", kString, "\"steps\"",
       "unit of decay_length, decay_start, decay_every, milestones", units},
      {"schedule.decay_start", kNumber, "-1.0",
       "where the decay phase starts (-1: where the warmup ends)", {}, "schedule.decay_unit",
       &kByDecayReadAlways, {"step", "multistep", "exponential", "inverse_time", "polynomial", "cosine", "linear", "inverse_sqrt", "wsd"}},
      {"schedule.decay_length", kNumber, "0.0",
       "length of the decay phase (0: to the end of the run)", {}, "schedule.decay_unit", decay,
       {"exponential", "inverse_time", "polynomial", "cosine", "linear", "wsd"}},
      {"schedule.decay_every", kNumber, "0.0",
       "period of step / exponential / inverse_time, timescale of inverse_sqrt (0: exponential and inverse_time use decay_length, inverse_sqrt the warmup)",
       {}, "schedule.decay_unit", decay, {"step", "exponential", "inverse_time", "inverse_sqrt"}},
      {"schedule.milestones", kNumberList, "[]", "boundaries, counted from the decay start", {},
       "schedule.decay_unit", decay, {"multistep"}},
      {"schedule.gamma", kNumber, "0.1", "LR factor per period (step, exponential) or milestone",
       {}, "", decay, {"step", "multistep", "exponential"}},
      {"schedule.staircase", kBool, "false", "decay in whole periods only", {}, "", decay,
       {"exponential", "inverse_time"}},
      {"schedule.power", kNumber, "1.0", "polynomial exponent (You et al. LARS: 2)", {}, "", decay,
       {"polynomial"}},
      {"schedule.rate", kNumber, "1.0", "lr = peak / (1 + rate * t / decay_every)", {}, "", decay,
       {"inverse_time"}},
      {"schedule.final_frac", kNumber, "0.0", "final LR as a fraction of the peak", {}, "", decay,
       {"polynomial", "cosine", "linear", "wsd"}},
      {"schedule.cooldown_frac", kNumber, "0.2", "fraction of the decay phase spent cooling down",
       {}, "", decay, {"wsd"}},
      {"schedule.cooldown_shape", kString, "\"linear\"", "shape of the cooldown",
       {"linear", "cosine", "1-sqrt"}, "", decay, {"wsd"}},
      {"schedule.min_lr", kNumber, "0.0", "floor on the LR, absolute (0: none)"},
  };
  // clang-format on
  return keys;
}

}  // namespace lbt::schedules
