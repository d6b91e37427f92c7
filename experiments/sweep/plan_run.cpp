// lbt plan's run; see plan_run.hpp.
#include "experiments/sweep/plan_run.hpp"

#include <zlib.h>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/json_file.hpp"
#include "experiments/lbt_schema.hpp"
#include "trainer/data/load.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// Whether a schedule of `steps` differs, over those steps, from the same one over a trial's
// `horizon` (one that decays to the end of the run decays faster in a shorter one).
bool schedule_differs(const trainer::RunConfig& run, std::int64_t steps_per_epoch,
                      std::int64_t steps, std::int64_t horizon) {
  if (horizon <= 0 || horizon == steps) return false;
  const schedules::Schedule planned = trainer::run_schedule(run, {steps_per_epoch, steps}, nullptr);
  const schedules::Schedule trials =
      trainer::run_schedule(run, {steps_per_epoch, horizon}, nullptr);
  for (std::int64_t step = 0; step < std::min(steps, horizon); ++step)
    if (planned(step) != trials(step)) return true;
  return false;
}

std::uint32_t text_crc32(const std::string& text) {
  return static_cast<std::uint32_t>(
      crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(text.data()), text.size()));
}

// sweep.json's seal of base_config.toml; none where it holds none (or an edit: not a CRC-32).
std::optional<std::uint32_t> base_config_seal(const nlohmann::json& manifest) {
  const auto seal = manifest.find("base_config_crc32");
  if (seal == manifest.end() || !seal->is_number_unsigned() ||
      seal->get<std::uint64_t>() > 0xffffffffu)
    return std::nullopt;
  return seal->get<std::uint32_t>();
}

}  // namespace

SweepManifest read_sweep_manifest(const fs::path& dir) {
  const std::string restore = "restore it, or rerun the sweep's lbt sweep command on " +
                              dir.string() + " (finished trials are kept) to rewrite it";
  const nlohmann::json manifest = read_json_object(dir / "sweep.json", restore);
  const auto target = manifest.find("target");
  if (target == manifest.end() || !target->is_string() || target->get<std::string>().empty())
    throw DataError((dir / "sweep.json").string() + " names no target (\"target\": \"...\")",
                    restore);
  SweepManifest m{target->get<std::string>(), {}};
  // As lbt sweep checks them (sweep_plan.cpp): neither negative, one of them set. Anything else
  // (an edit) is no record: a trial length of 1 step would make the plan's run end at once.
  const auto budget = [&](const char* key) {
    const nlohmann::json v = manifest.value(key, nlohmann::json());
    return v.is_number_integer() ? v.get<std::int64_t>() : std::int64_t{-1};
  };
  if (const std::int64_t e = budget("max_examples"), s = budget("max_steps");
      e >= 0 && s >= 0 && e + s > 0) {
    m.max_examples = e;
    m.max_steps = s;
  }
  if (const auto exec = manifest.find("exec"); exec != manifest.end() && exec->is_string())
    m.exec = exec->get<std::string>();
  m.base_config_crc32 = base_config_seal(manifest);
  const auto sets = manifest.find("sets");
  if (sets == manifest.end()) return m;  // a sweep from before its --set options were kept
  if (!sets->is_array() ||
      !std::all_of(sets->begin(), sets->end(), [](const auto& s) { return s.is_string(); }))
    throw DataError((dir / "sweep.json").string() + ": \"sets\" is not a list of KEY=VALUE",
                    restore);
  m.sets = sets->get<std::vector<std::string>>();
  return m;
}

nlohmann::json with_base_config_seal(nlohmann::json manifest, const std::string& base_config) {
  manifest["base_config_crc32"] = text_crc32(base_config);
  return manifest;
}

bool base_config_sealed(const nlohmann::json& manifest, const std::string& base_config) {
  return base_config_seal(manifest) == text_crc32(base_config);
}

Config trials_config(const fs::path& dir, const SweepManifest& manifest) {
  const fs::path path = dir / "base_config.toml";
  const std::string text = io::read_file(path);
  if (manifest.base_config_crc32 && *manifest.base_config_crc32 != text_crc32(text)) {
    throw DataError(path.string() +
                        " is not the trials' config lbt sweep wrote (its CRC-32 is not the one "
                        "sweep.json records): it was cut short or edited, and the plan would "
                        "train another model than the sweep's",
                    "restore it, or rerun the sweep's lbt sweep command on " + dir.string() +
                        " (finished trials are kept) to rewrite it");
  }
  if (text.rfind("# Written by lbt sweep", 0) != 0) {
    throw DataError(path.string() +
                        " is not the trials' config lbt sweep wrote (its first line "
                        "says so): the plan would train another model than the sweep's",
                    "restore it: the sweep's config without its [sweep] table, under the line "
                    "'# Written by lbt sweep from FILE without its [sweep] table.'");
  }
  return load_config(path, manifest.sets, nullptr);
}

PlanRun set_plan_run(Config& config, const PlanRunOptions& o) {
  const std::int64_t B = o.global_batch;
  // optimizer.lr is given at the reference batch: the schedule's own rule takes it to lr at B,
  // so warmup from the base LR and LEGW keep their meaning.
  for (const std::string& s :
       {"train.global_batch=" + std::to_string(B), "train.steps=" + std::to_string(o.steps),
        "train.eval_every=" + std::to_string(o.eval_every), "train.target=" + o.target,
        std::string("train.stop_at_target=true")}) {
    config.set(s);
  }
  char lr_text[32];
  std::snprintf(lr_text, sizeof lr_text, "%.17g", o.lr_at_reference);
  config.set(std::string("optimizer.lr=") + lr_text);
  if (o.workers > 0) config.set("train.micro_batch=" + std::to_string(o.micro_batch));
  config.validate(lbt_schema());
  const int world = o.workers > 0 ? o.workers : 1;
  PlanRun plan{trainer::resolve_run_config(config, world)};
  const trainer::RunConfig& run = plan.run;
  const std::int64_t train_examples = data::load_splits(run.train.data, run.train.seed).train.n;
  if (B > train_examples) {  // the budget chose it: name the options, not train.global_batch
    throw ConfigError("the plan's global batch " + std::to_string(B) + " is more than the " +
                          std::to_string(train_examples) + " training examples",
                      o.workers > 0 ? "lower --workers or --micro-batch"
                                    : "lower --max-examples, or raise --max-steps");
  }
  const trainer::StepBudget steps = trainer::step_budget(run.train, train_examples, world);
  try {
    trainer::run_schedule(run, steps, nullptr);
  } catch (const ConfigError& e) {
    if (o.steps != o.max_steps) throw;
    // The run is --max-steps long: the hint to lengthen train.steps was one lbt plan overrides.
    throw ConfigError("--max-steps " + std::to_string(o.max_steps) +
                          " is too short for the trials' schedule: " + e.what(),
                      "allow more steps (--max-steps), or plan with --max-examples or --workers");
  }
  plan.schedule_differs = schedule_differs(run, steps.steps_per_epoch, o.steps, o.trials_steps);
  return plan;
}

}  // namespace lbt::experiments
