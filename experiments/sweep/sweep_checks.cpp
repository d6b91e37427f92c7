// What a sweep checks before it runs anything; see sweep_checks.hpp.
#include "experiments/sweep/sweep_checks.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/kernel_identity.hpp"
#include "core/shortest_text.hpp"
#include "core/toml_text.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/json_file.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/output_kind.hpp"
#include "experiments/rank_agreement.hpp"
#include "experiments/run_check.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/sweep/plan_run.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/load.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;

// Keys the sweep sets for every trial: a --set of one would be overridden, so it is refused.
void refuse_trial_keys(const std::vector<std::string>& sets) {
  const std::pair<const char*, const char*> owned[] = {
      {"train.global_batch", "--batch-sizes or sweep.batch_sizes"},
      {"train.steps", "sweep.max_steps or sweep.max_examples"},
      {"train.epochs", "sweep.max_examples"},
      {"train.eval_every", "sweep.eval_every_examples"},
      {"train.eval_growth", "sweep.eval_growth"},
      {"train.prune_at_step", "sweep.prune"},
      {"train.stop_at_target", "nothing: a sweep's trials stop at the target"},
  };
  for (const auto& s : sets) {
    const std::string key = s.substr(0, s.find('='));
    for (const auto& [owned_key, instead] : owned) {
      if (key == owned_key) {
        throw ConfigError(
            "lbt sweep sets " + key + " for each trial; --set " + s + " would be overridden",
            "drop it; use " + std::string(instead));
      }
    }
  }
}

// The trials' config: the sweep's file without its [sweep] table (the trainer rejects
// keys it does not read), kept in the sweep directory so every trial and array task uses it.
std::string trial_base_config(const fs::path& config_path) {
  toml::table table;
  try {
    table = toml::parse_file(config_path.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(config_path.string() + ": " + std::string(e.description()),
                      "fix the TOML syntax at the reported line");
  }
  table.erase("sweep");
  std::ostringstream ss;
  ss << "# Written by lbt sweep from " << comment_text(config_path.string())
     << " without its [sweep] table.\n"
     << toml_text(table) << "\n";
  return ss.str();
}

namespace {

// The trials whose checks cover the plan: the first of each batch size (the LR trials at a batch
// differ only in optimizer.lr, optimizer.momentum and train.seed, in ranges read_sweep_settings
// checked) and every adaptive trial. One per batch size keeps a plan of 100,000 batch sizes
// seconds long.
std::vector<const Trial*> trials_to_check(const std::vector<Trial>& plan) {
  std::vector<const Trial*> chosen;
  for (const Trial& t : plan) {
    if (t.adaptive || chosen.empty() || chosen.back()->batch_size != t.batch_size)
      chosen.push_back(&t);
  }
  return chosen;
}

// Ctrl-C or SIGTERM while checking: nothing is written yet, so the sweep just stops.
void throw_if_interrupted(std::size_t checked, std::size_t total) {
  const int signal = sweep_interrupt_signal();
  if (signal == 0) return;
  throw Interrupted(signal,
                    std::string("lbt sweep stopped by ") + trainer::signal_name(signal) +
                        " while checking its trials (" + std::to_string(checked) + " of " +
                        std::to_string(total) + " checked); nothing was written",
                    "rerun the same command to check (and run) the sweep");
}

// `trial`'s config as `lbt train` will resolve it: the sweep's config without [sweep], with the
// trial's overrides.
trainer::RunConfig resolve_trial(const Config& base, const Trial& trial, Config& c) {
  c = Config(base);
  for (const auto& s : trial.overrides) c.set(s);
  c.validate(lbt_schema());
  return trainer::resolve_run_config(c, 1);
}

// The error of one trial's check, naming the trial.
ConfigError in_trial(const Trial& trial, const ConfigError& e) {
  const std::string batch = trial.adaptive ? "adaptive" : "B=" + std::to_string(trial.batch_size);
  return ConfigError("trial " + trial.name + " (" + batch + ", " + std::to_string(trial.steps) +
                         " steps): " + e.what(),
                     e.hint());
}

}  // namespace

// Resolves each batch size's trial config the way `lbt train` will and checks what its run
// checks before the first step (run_check.hpp), so that a bad key, a model whose layers do not
// fit the data, a micro-batch layout or a warmup longer than a trial's budget fails now, not
// in N children. The data are loaded and the model's shapes built once (neither depends on
// the batch).
std::vector<std::string> validate_trial_configs(const Config& sweep_config,
                                                const std::vector<Trial>& plan) {
  Config base = sweep_config;
  base.erase("sweep");  // else every copy below carries sweep.batch_sizes: quadratic in them
  const std::vector<const Trial*> trials = trials_to_check(plan);
  std::optional<data::Splits> splits;
  std::unique_ptr<nn::Model> model;
  std::vector<std::string> data;
  Config c;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    throw_if_interrupted(i, trials.size());
    const Trial& trial = *trials[i];
    trainer::RunConfig run;
    try {
      run = resolve_trial(base, trial, c);
    } catch (const ConfigError& e) {
      throw in_trial(trial, e);
    }
    if (!model) {  // the first trial: the data and the model's shapes are every trial's
      check_model_spec(run.train);
      splits = data::load_splits(run.train.data, run.train.seed);
      data = data_fingerprints(data::data_files(run.train.data));
      model = model_for_data(run.train, splits->train);
      check_optimizer(run, *model);
    }
    try {
      check_run_at_batch(c, run, *model, *splits, /*world=*/1, i == 0 ? &std::cerr : nullptr);
      // The device's checks lbt can make (not the GPU's presence: the first trial finds that).
      if (i == 0) check_device_parts(c, run, splits->train);
    } catch (const ConfigError& e) {
      throw in_trial(trial, e);
    }
  }
  return data;
}

nlohmann::json plan_json(const std::vector<Trial>& plan) {
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : plan) {
    trials.push_back({{"name", t.name},
                      {"index", t.index},
                      {"batch_size", t.batch_size},
                      {"lr", t.lr},
                      {"lr_multiplier", t.multiplier},
                      {"momentum", t.momentum},
                      {"seed", t.seed},
                      {"prune_at_step", t.prune_at_step},
                      {"steps", t.steps},
                      {"eval_every", t.eval_every},
                      {"overrides", t.overrides}});
  }
  return trials;
}

std::vector<std::string> trial_sets(const std::vector<std::string>& sets) {
  std::vector<std::string> kept;
  for (const auto& s : sets)
    if (s.rfind("sweep.", 0) != 0) kept.push_back(s);
  return kept;
}

nlohmann::json sweep_manifest(const fs::path& config_path, const SweepSettings& settings,
                              const std::vector<Trial>& plan, const std::string& exec_command,
                              const std::vector<std::string>& sets,
                              const std::vector<std::string>& data) {
  return {{"config", fs::absolute(config_path).string()},
          {"batch_sizes", settings.batch_sizes},
          {"target", settings.target},
          {"scaling", settings.scaling},
          {"reference_batch", settings.reference_batch},
          {"base_lr", settings.base_lr},
          {"lr_search", settings.lr_search},
          {"search",
           {{"refine_ratio", settings.search.refine_ratio},
            {"max_trials", settings.search.max_trials},
            {"prune", settings.search.prune},
            {"eval_growth", settings.eval_growth}}},
          {"seeds", settings.seeds},
          {"max_examples", settings.max_examples},  // each trial's budget (trial_steps)
          {"max_steps", settings.max_steps},
          {"exec", exec_command},
          {"sets", trial_sets(sets)},
          {"data", data},
          {"trials", plan_json(plan)}};
}

void check_sweep_directory(const fs::path& dir, bool collect_only, bool check_only) {
  refuse_other_output(dir, OutputKind::kSweep, "lbt sweep");
  if (collect_only && !fs::exists(dir / "sweep.json"))
    throw ConfigError("--collect: " + dir.string() + " holds no sweep (no sweep.json)",
                      "give --out the sweep directory to collect, or run the sweep without "
                      "--collect");
  if (check_only) {
    DirLock::check(dir / "sweep.lock", "lbt sweep");  // another sweep running there
    io::check_can_create_directories(dir / "trials", "sweep directory");
  }
}

// A resumed sweep must mean the same experiment: trials planned under other settings (another
// target, seed, model, --set, LR or budget) would be mixed into one CSV as if they belonged to
// this plan. Names every difference; new trials (more batch sizes) only with --extend.
namespace {

// "data.path (file 2 of 4): 29491 bytes then, 29490 bytes now" for the first line of
// sweep.json's "data" that differs; "" where none does (DataPrint::same_contents: a print from
// before whole-file CRCs compares by its sampled part).
std::string data_difference(const nlohmann::json& before, const nlohmann::json& after) {
  const auto print = [](const nlohmann::json& lines, std::size_t i) {
    const bool has = lines.is_array() && i < lines.size() && lines[i].is_string();
    return read_data_print(has ? lines[i].get<std::string>() : "");
  };
  for (std::size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
    const DataPrint a = print(before, i), b = print(after, i);
    if (a.same_contents(b)) continue;
    return (a.key.empty() ? b.key : a.key) + " (file " + std::to_string(i + 1) + " of " +
           std::to_string(after.size()) + "): " + data_change(a, b);
  }
  return "";
}

// The trials in `dir` whose summary records a result (not failed, timed out or unfinished): a
// new --exec command would mix them with its own.
int trials_with_results(const fs::path& dir) {
  int count = 0;
  std::error_code ec;
  for (const auto& trial : fs::directory_iterator(dir / "trials", ec)) {
    try {
      const std::string status = trial_summary_text(trial.path(), "status");  // "": none yet
      count += is_final_status(status) && status != "failed" && status != "timeout";
    } catch (const std::exception&) {  // unreadable: unfinished
    }
  }
  return count;
}

}  // namespace

void check_same_plan(const fs::path& dir, const nlohmann::json& now, const std::string& base_config,
                     const SweepOptions& options) {
  const fs::path manifest = dir / "sweep.json";
  if (!fs::exists(manifest)) return;
  // lbt writes it atomically: one that does not parse was cut or edited, and without it the
  // trials on disk cannot be told to belong to this plan.
  const nlohmann::json old = read_json_object(
      manifest, "restore it, or delete it to rerun without the check that the trials in " +
                    dir.string() + " were planned with these settings");
  std::vector<std::string> differs;
  for (const char* key :
       {"target", "scaling", "reference_batch", "base_lr", "lr_search", "search", "exec", "sets"}) {
    if (old.contains(key) && old[key] != now[key]) {
      // A launcher's fix (--oversubscribe) to trials that all failed is the same experiment.
      const bool exec = key == std::string("exec");
      const int kept = exec && options.retry_failed ? trials_with_results(dir) : -1;
      if (kept == 0) continue;
      if (kept > 0) {
        differs.push_back("exec: " + std::to_string(kept) + " trials have results from " +
                          old[key].dump() + "; --retry-failed takes another command only where " +
                          "no trial has one");
        continue;
      }
      differs.push_back(std::string(key == std::string("sets") ? "--set options" : key) + ": " +
                        old[key].dump() + " -> " + now[key].dump());
    }
  }
  // The data's contents (its paths are in the config, compared below).
  if (old.contains("data")) {
    if (const std::string d = data_difference(old["data"], now["data"]); !d.empty())
      differs.push_back("the data files' sizes or contents (" + d + ")");
  }
  // The trials' config (the sweep's file without [sweep]), key by key, unless sweep.json seals
  // this very text (a file on disk cut short read as "other settings"; it is written again).
  if (fs::exists(dir / "base_config.toml") && !base_config_sealed(old, base_config)) {
    const auto before = flatten_config(io::read_file(dir / "base_config.toml"));
    const auto after = flatten_config(base_config);
    for (const auto& [key, value] : after) {
      auto it = before.find(key);
      if (it == before.end() || it->second != value)
        differs.push_back(key + ": " + (it == before.end() ? "(unset)" : it->second) + " -> " +
                          value);
    }
    for (const auto& [key, value] : before) {
      if (!after.count(key)) differs.push_back(key + ": " + value + " -> (unset)");
    }
  }
  std::map<std::string, nlohmann::json> old_trials, new_trials;
  for (const auto& t : old.value("trials", nlohmann::json::array()))
    old_trials[t.value("name", "")] = t;
  for (const auto& t : now["trials"]) new_trials[t.value("name", "")] = t;
  std::string added, dropped;
  std::vector<std::string> changed;  // trials whose LR or length moved: the first few, a count
  for (const auto& [name, t] : new_trials) {
    auto it = old_trials.find(name);
    if (it == old_trials.end()) {
      added += (added.empty() ? "" : ", ") + name;
      continue;
    }
    const auto& o = it->second;
    const double lr = t["lr"], old_lr = o.value("lr", 0.0);
    if (std::abs(old_lr - lr) > 1e-9 * std::abs(lr) || o.value("steps", 0LL) != t["steps"] ||
        o.value("eval_every", 0LL) != t["eval_every"] ||
        std::abs(o.value("momentum", -1.0) - t["momentum"].get<double>()) > 1e-12) {
      changed.push_back("trial " + name + ": lr " + shortest_text(old_lr) + ", steps " +
                        std::to_string(o.value("steps", 0LL)) + " -> lr " + shortest_text(lr) +
                        ", steps " + t["steps"].dump());
    }
  }
  // One line per trial ran to hundreds of lines before the hint (2026-11-29 audit).
  for (std::size_t i = 0; i < std::min<std::size_t>(changed.size(), 3); ++i)
    differs.push_back(changed[i]);
  if (changed.size() > 3)
    differs.push_back("... and " + std::to_string(changed.size() - 3) + " more trials likewise");
  for (const auto& [name, t] : old_trials) {
    if (!new_trials.count(name)) dropped += (dropped.empty() ? "" : ", ") + name;
  }
  // Also what an array task of a script from before an --extend meets: the directory's plan
  // has the new trials, its command not (it read "no longer in the plan" of those just added).
  if (!dropped.empty())
    differs.push_back("trials this command does not plan: " + dropped +
                      " (a SLURM array task from before an --extend runs the old command: "
                      "cancel that array and submit the new sweep.sbatch)");
  // More seeds extend the plan (the search's trials stay); fewer would drop finished trials.
  const int old_seeds = old.value("seeds", 1), new_seeds = now.value("seeds", 1);
  if (new_seeds < old_seeds || (new_seeds > old_seeds && !options.extend)) {
    differs.push_back("sweep.seeds: " + std::to_string(old_seeds) + " -> " +
                      std::to_string(new_seeds) +
                      (new_seeds > old_seeds ? " (pass --extend to add the seeds)" : ""));
  }
  if (!added.empty() && !options.extend)
    differs.push_back("new trials: " + added + " (pass --extend to add them)");
  if (differs.empty()) return;
  std::string list;
  for (const auto& d : differs) list += "\n  " + d;
  throw ConfigError(
      "sweep directory " + dir.string() + " holds a sweep planned with other settings:" + list,
      "rerun with the same config and options to resume it; --extend adds trials of "
      "new batch sizes to it; for another experiment use a new --out");
}

void check_unreadable_summaries(const std::vector<TrialResult>& results, const fs::path& trials_dir,
                                bool collect_only) {
  for (const TrialResult& r : results) {
    if (r.unreadable.empty()) continue;
    const fs::path summary = trials_dir / r.trial.name / "summary.json";
    if (collect_only) {
      throw DataError(
          summary.string() + " is " + r.unreadable,
          "restore it, or run the sweep without --collect to run trial " + r.trial.name + " again");
    }
    std::fprintf(stderr, "warning: %s is %s: trial %s runs again\n", summary.c_str(),
                 r.unreadable.c_str(), r.trial.name.c_str());
  }
}

void warn_other_kernels(const std::vector<TrialResult>& results, const fs::path& trials_dir) {
  const KernelIdentity now = kernel_identity();
  std::vector<std::string> names;
  std::string theirs;
  for (const TrialResult& r : results) {
    if (!is_final_status(r.status)) continue;
    const std::string kernels = trial_summary_text(trials_dir / r.trial.name, "kernels");
    if (kernels.empty() || same_kernels(kernels, now.text)) continue;  // "": before 2026-11-29
    theirs = kernels;
    names.push_back(r.trial.name);
  }
  if (names.empty()) return;
  std::string listed;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 3) listed += " and " + std::to_string(names.size() - 3) + " more";
  std::fprintf(stderr,
               "[sweep] warning: finished trials %s ran on other kernels (%s) than this run's "
               "(%s): the sweep's numbers mix two orders of summation; to keep one, rerun with "
               "the environment they ran in\n",
               listed.c_str(), theirs.c_str(), now.text.c_str());
}

}  // namespace lbt::experiments
