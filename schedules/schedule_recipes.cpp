// The recipe table; see schedule_recipes.hpp. Lengths are the papers' ImageNet values in
// epochs, counted from the start of training (decay_start = 0); shorter runs override them.
#include "schedules/schedule_recipes.hpp"

namespace lbt::schedules {

const std::vector<ScheduleRecipe>& schedule_recipes() {
  static const std::vector<ScheduleRecipe> recipes = {
      {"goyal",
       "Goyal et al. 2017, arXiv:1706.02677: linear scaling, 5-epoch gradual warmup from the "
       "unscaled LR, x0.1 at epochs 30, 60, 80",
       {{"schedule.scaling", "\"linear\""},
        {"schedule.warmup", "5.0"},
        {"schedule.warmup_unit", "\"epochs\""},
        {"schedule.warmup_kind", "\"linear\""},
        {"schedule.warmup_from_base_lr", "true"},
        {"schedule.decay", "\"multistep\""},
        {"schedule.decay_unit", "\"epochs\""},
        {"schedule.decay_start", "0.0"},
        {"schedule.milestones", "[30.0, 60.0, 80.0]"},
        {"schedule.gamma", "0.1"}}},
      {"lars",
       "You et al. 2017, arXiv:1708.03888: 5-epoch linear warmup, then polynomial decay of "
       "power 2 to zero at the end of the run",
       {{"schedule.warmup", "5.0"},
        {"schedule.warmup_unit", "\"epochs\""},
        {"schedule.warmup_kind", "\"linear\""},
        {"schedule.decay", "\"polynomial\""},
        {"schedule.power", "2.0"},
        {"schedule.final_frac", "0.0"}}},
      {"legw",
       "You et al. 2019, arXiv:1901.08256 (LEGW): sqrt scaling, warmup epochs grown linearly "
       "with the batch (1 epoch at the reference batch), polynomial decay of power 2",
       {{"schedule.scaling", "\"sqrt\""},
        {"schedule.warmup", "1.0"},
        {"schedule.warmup_unit", "\"epochs\""},
        {"schedule.warmup_legw", "true"},
        {"schedule.decay", "\"polynomial\""},
        {"schedule.power", "2.0"},
        {"schedule.final_frac", "0.0"}}},
      {"cosine",
       "Loshchilov & Hutter 2017, arXiv:1608.03983 (no restarts), with Goyal et al.'s 5-epoch "
       "linear warmup: cosine decay to zero at the end of the run",
       {{"schedule.warmup", "5.0"},
        {"schedule.warmup_unit", "\"epochs\""},
        {"schedule.warmup_kind", "\"linear\""},
        {"schedule.decay", "\"cosine\""},
        {"schedule.final_frac", "0.0"}}},
      {"wsd",
       "Warmup-stable-decay (Hu et al. 2024, arXiv:2404.06395; Hagele et al. 2024, "
       "arXiv:2405.18392): 5-epoch warmup, constant LR, 1-sqrt cooldown over the last 20%",
       {{"schedule.warmup", "5.0"},
        {"schedule.warmup_unit", "\"epochs\""},
        {"schedule.warmup_kind", "\"linear\""},
        {"schedule.decay", "\"wsd\""},
        {"schedule.cooldown_frac", "0.2"},
        {"schedule.cooldown_shape", "\"1-sqrt\""},
        {"schedule.final_frac", "0.0"}}},
  };
  return recipes;
}

void apply_schedule_recipe(Config& config) {
  const std::string name = config.peek_string("schedule.recipe", "none");
  for (const auto& recipe : schedule_recipes()) {
    if (recipe.name != name) continue;
    // A warmup start the config gives (file or --set; 0 included) is the start: goyal's start
    // from the unscaled LR made --set schedule.warmup_start=0 a no-op and 0.1 an error blaming
    // the config for a key only the recipe set (2026-11-29 audit).
    const bool start_given =
        config.has("schedule.warmup_start") || config.has("schedule.warmup_start_lr");
    for (const auto& [key, value] : recipe.values) {
      if (start_given && key == "schedule.warmup_from_base_lr") continue;
      config.set_default(key + "=" + value);
    }
  }
}

}  // namespace lbt::schedules
