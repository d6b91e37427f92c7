// Reading the schedule.* keys into ScheduleOptions (the typed options make_schedule takes);
// see schedule_options.hpp. Only the keys the chosen decay uses are read, so the resolved
// config.toml holds this run's keys and no others.
#include <string_view>

#include "schedules/schedule_keys.hpp"
#include "schedules/schedule_options.hpp"

namespace lbt::schedules {

ScheduleOptions read_schedule_options(Config& config, std::int64_t configured_batch) {
  const auto key = [](std::string_view name) -> const KeySpec& {
    return Schema::in(schedule_keys(), name);
  };
  const auto applies = [&](std::string_view name) { return key(name).applies(config); };
  ScheduleOptions o;
  o.source = config.source();
  for (const KeySpec& spec : schedule_keys())
    if (config.has(spec.key) && config.source_of(spec.key).empty())
      o.set_on_command_line.insert(spec.key);
  o.recipe = config.get_string(key("schedule.recipe"));
  o.scaling = config.get_string(key("schedule.scaling"));
  o.reference_batch = config.get_int(key("schedule.reference_batch"), configured_batch);
  if (o.reference_batch <= 0) {
    config.fail("schedule.reference_batch", "> 0", std::to_string(o.reference_batch),
                "set it to the global batch at which optimizer.lr was tuned");
  }
  o.steps_per_epoch = config.get_int(key("schedule.steps_per_epoch"));
  if (o.steps_per_epoch < 0)  // -1 printed a CSV header and no rows, exit 0 (2026-11-29 audit)
    config.fail("schedule.steps_per_epoch", ">= 0 (0: from the dataset)",
                std::to_string(o.steps_per_epoch));
  o.warmup = config.get_double(key("schedule.warmup"));
  o.warmup_unit = config.get_string(key("schedule.warmup_unit"));
  o.warmup_kind = config.get_string(key("schedule.warmup_kind"));
  o.warmup_start = config.get_double(key("schedule.warmup_start"));
  // "Given" means a start other than the default: a run's resolved config.toml, which --resume
  // reads, holds every key, so presence alone would make its own values conflict.
  o.warmup_start_given = o.warmup_start != 0.0;
  o.warmup_start_lr = config.get_double(key("schedule.warmup_start_lr"));
  o.warmup_from_base_lr = config.get_bool(key("schedule.warmup_from_base_lr"));
  o.warmup_legw = config.get_bool(key("schedule.warmup_legw"));
  o.decay = config.get_string(key("schedule.decay"));
  o.decay_unit = config.get_string(key("schedule.decay_unit"));
  o.decay_start = config.get_double(key("schedule.decay_start"));
  // The chosen decay's own keys only: the others are not part of this run's config.
  if (applies("schedule.decay_length"))
    o.decay_length = config.get_double(key("schedule.decay_length"));
  if (applies("schedule.decay_every"))
    o.decay_every = config.get_double(key("schedule.decay_every"));
  if (applies("schedule.milestones"))
    o.milestones = config.get_double_list(key("schedule.milestones"));
  if (applies("schedule.gamma")) o.gamma = config.get_double(key("schedule.gamma"));
  if (applies("schedule.staircase")) o.staircase = config.get_bool(key("schedule.staircase"));
  if (applies("schedule.power")) o.power = config.get_double(key("schedule.power"));
  if (applies("schedule.rate")) o.rate = config.get_double(key("schedule.rate"));
  if (applies("schedule.final_frac")) o.final_frac = config.get_double(key("schedule.final_frac"));
  if (applies("schedule.cooldown_frac")) {
    o.cooldown_frac = config.get_double(key("schedule.cooldown_frac"));
    o.cooldown_shape = config.get_string(key("schedule.cooldown_shape"));
  }
  o.min_lr = config.get_double(key("schedule.min_lr"));
  return o;
}

}  // namespace lbt::schedules
