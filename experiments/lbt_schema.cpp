// The joined schema; see lbt_schema.hpp.
#include "experiments/lbt_schema.hpp"

#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>

#include "experiments/sweep_keys.hpp"
#include "schedules/schedule_recipes.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::experiments {

const Schema& lbt_schema() {
  static const Schema schema = [] {
    Schema s = trainer::run_schema();
    s.add(sweep_keys());
    // One LR-scaling concept: the sweep's prior is the schedule's rule, not a rule of its own.
    s.retire(
        "sweep.lr_rule",
        "the sweep's LR prior is optimizer.lr x schedule.scaling(B / schedule.reference_batch): "
        "set schedule.scaling instead");
    s.retire("sweep.reference_batch",
             "set schedule.reference_batch instead (the batch at which "
             "optimizer.lr was tuned; default: train.global_batch)");
    s.retire("sweep.evals_per_trial",
             "trial evaluations are spaced geometrically (sweep.eval_growth) and the crossing is "
             "refined to train.target_resolution: drop the key");
    // Other tools' names (PyTorch's, Hugging Face's, most configs'), for "did you mean".
    for (const auto& [other_name, key] : std::initializer_list<std::pair<const char*, const char*>>{
             {"learning_rate", "optimizer.lr"},
             {"batch_size", "train.global_batch"},
             {"batch", "train.global_batch"},
             {"num_steps", "train.steps"},
             {"total_steps", "train.steps"},
             {"max_steps", "train.steps"},
             {"num_epochs", "train.epochs"},
             {"max_epochs", "train.epochs"},
             {"wd", "optimizer.weight_decay"},
             {"epsilon", "optimizer.eps"},
             {"beta_1", "optimizer.beta1"},
             {"beta_2", "optimizer.beta2"},
             {"warmup_steps", "schedule.warmup"},
             {"warmup_epochs", "schedule.warmup"},
             {"optimizer", "optimizer.name"},
             {"model", "model.spec"},
             {"arch", "model.spec"}})
      s.also_known_as(other_name, key);
    return s;
  }();
  return schema;
}

namespace {

// The file's train.global_batch: its value, else the key's default.
std::int64_t file_global_batch(const Config& file) {
  constexpr std::string_view kKey = "train.global_batch";
  return file.peek_int(kKey).value_or(std::stoll(lbt_schema().find(kKey)->default_value));
}

}  // namespace

Config load_config(const std::filesystem::path& path, const std::vector<std::string>& sets,
                   std::ostream* notes) {
  return load_config(Config::from_file(path), sets, notes);
}

Config load_config(Config config, const std::vector<std::string>& sets, std::ostream* notes) {
  const std::int64_t tuned_at = file_global_batch(config);
  for (const auto& s : sets) config.set(s);
  // schedule.reference_batch defaults to train.global_batch: the batch at which optimizer.lr was
  // tuned, the file's. A --set of the batch alone leaves it there, so the scaling rule scales
  // the LR (as lbt schedule -b does); the default had followed the --set, the rule then x1.
  if (!config.has("schedule.reference_batch") &&
      config.peek_int("train.global_batch").value_or(tuned_at) != tuned_at) {
    config.set_default("schedule.reference_batch=" + std::to_string(tuned_at));
  }
  schedules::apply_schedule_recipe(config);
  for (const auto& note : config.validate(lbt_schema())) {
    if (notes) *notes << "note: " << note << "\n";
  }
  return config;
}

}  // namespace lbt::experiments
