// Named LR-schedule recipes from the large-batch literature (schedule.recipe): each fills the
// schedule.* keys a config leaves unset, so `--set schedule.recipe=goyal` on any preset gives
// that recipe with the preset's own optimizer, and any key set explicitly wins.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace lbt::schedules {

struct ScheduleRecipe {
  std::string name;
  std::string source;                                       // the paper the values come from
  std::vector<std::pair<std::string, std::string>> values;  // key -> TOML value
};

const std::vector<ScheduleRecipe>& schedule_recipes();

// Fills the keys of the recipe named by schedule.recipe (if any) that `config` leaves unset.
// Call before Config::validate: a recipe key the config's own choices do not use is dropped
// there with a note.
void apply_schedule_recipe(Config& config);

}  // namespace lbt::schedules
