// lbt plan --from CBS_DIR; see batch_warmup.hpp.
#include "experiments/cbs/batch_warmup.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/toml_text.hpp"
#include "experiments/cbs/cbs_plan.hpp"
#include "experiments/json_file.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/sweep/scale_plan.hpp"
#include "schedules/scaling.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;

std::vector<trainer::BatchStep> warmup_stages(const std::vector<CbsReading>& readings,
                                              std::int64_t grid, std::int64_t max_batch) {
  const std::int64_t top = std::max(grid, max_batch / grid * grid);
  auto on_grid = [&](std::int64_t b) { return std::clamp(b / grid * grid, grid, top); };
  std::vector<trainer::BatchStep> stages;
  auto add = [&](std::int64_t from, std::int64_t batch) {
    if (!stages.empty()) batch = std::max(batch, stages.back().batch);  // a warmup: never down
    if (!stages.empty() && batch == stages.back().batch) return;
    if (!stages.empty() && from == stages.back().from_examples) stages.pop_back();
    stages.push_back({from, batch});
  };
  add(0, on_grid(readings.empty() ? grid : readings.front().batch));
  for (const CbsReading& r : readings)
    if (r.safe_batch) add(r.step * r.batch, on_grid(*r.safe_batch));
  return stages;
}

std::optional<std::string> above_measured_warning(const std::vector<CbsReading>& readings,
                                                  std::int64_t grid) {
  for (const CbsReading& r : readings) {
    if (!r.safe_batch || *r.safe_batch >= grid) continue;
    return "the layout's smallest batch, " + std::to_string(grid) +
           ", is above the critical batch measured at the reference's step " +
           std::to_string(r.step) + " (" + std::to_string(*r.safe_batch) +
           "): the warmup trains above it there, and steps will not fall in proportion";
  }
  return std::nullopt;
}

namespace {

[[noreturn]] void bad_cbs_json(const fs::path& path, const std::string& what) {
  throw DataError(path.string() + ": " + what,
                  "rerun the lbt cbs command that wrote it (finished branches are kept)");
}

// j[key] as a whole number >= `min` (exact in a double: lbt cbs writes batches and steps so).
std::int64_t whole(const nlohmann::json& j, const char* key, std::int64_t min, const fs::path& path,
                   const char* what = "a point") {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  const auto it = j.find(key);
  const bool ok = it != j.end() && it->is_number() && std::isfinite(it->get<double>()) &&
                  it->get<double>() == std::floor(it->get<double>()) &&
                  it->get<double>() >= static_cast<double>(min) && it->get<double>() <= kExact;
  if (!ok) {
    bad_cbs_json(path, std::string(what) + " without a whole \"" + key + "\" >= " +
                           std::to_string(min) + (it == j.end() ? "" : " (" + it->dump() + ")"));
  }
  return static_cast<std::int64_t>(it->get<double>());
}

// A point's safe batch (CbsReading): its estimate, else what its bound says. Either is a
// multiple of the point's batch (k x B), so never below it.
std::optional<std::int64_t> safe_batch(const nlohmann::json& point, std::int64_t batch,
                                       const fs::path& path) {
  const auto cbs = point.find("cbs");
  if (cbs != point.end() && !cbs->is_null()) return whole(point, "cbs", batch, path);
  const auto bound = point.find("bound");
  if (bound == point.end() || !bound->is_object()) return std::nullopt;
  const auto kind = bound->find("kind");
  if (kind != bound->end() && *kind == "below")
    return batch;  // 2B was outside the tolerance; B is the reference
  if (kind != bound->end() && *kind == "at_least")
    return whole(*bound, "batch", batch, path, "a point's bound");
  // lbt cbs writes only those two (cbs_files.cpp): another was edited in, and a plan read from
  // it would drop the point without a word.
  bad_cbs_json(path, "a point's bound of kind " +
                         (kind == bound->end() ? std::string("(none)") : kind->dump()) +
                         ", where lbt cbs writes \"below\" or \"at_least\"");
}

struct CbsFile {
  fs::path reference;
  std::string scaling;
  std::vector<CbsReading> readings;
};

CbsFile read_cbs_file(const fs::path& dir) {
  const fs::path path = dir / "cbs.json";
  const nlohmann::json j =
      read_json_object(path, "run lbt cbs --from RUN_DIR --out " + dir.string());
  CbsFile f;
  if (!j.contains("reference") || !j["reference"].is_string() || !j.contains("scaling") ||
      !j["scaling"].is_string() || !j.contains("points") || !j["points"].is_array())
    bad_cbs_json(path, "not lbt cbs's file (no \"reference\", \"scaling\" and \"points\")");
  f.reference = j["reference"].get<std::string>();
  f.scaling = j["scaling"].get<std::string>();
  for (const nlohmann::json& p : j["points"]) {
    if (!p.is_object()) bad_cbs_json(path, "a point that is not an object");
    CbsReading r{whole(p, "step", 0, path), whole(p, "batch", 1, path), std::nullopt};
    r.safe_batch = safe_batch(p, r.batch, path);
    f.readings.push_back(r);
  }
  std::sort(f.readings.begin(), f.readings.end(),
            [](const CbsReading& a, const CbsReading& b) { return a.step < b.step; });
  for (std::size_t i = 1; i < f.readings.size(); ++i) {
    if (f.readings[i].step == f.readings[i - 1].step)
      bad_cbs_json(path, "two points at step " + std::to_string(f.readings[i].step));
  }
  if (std::none_of(f.readings.begin(), f.readings.end(),
                   [](const CbsReading& r) { return r.safe_batch.has_value(); }))
    throw ConfigError(path.string() + " has no measured point (every CBS is null)",
                      "rerun lbt cbs at more steps or with --tolerance");
  return f;
}

std::string short_number(double x) {
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

}  // namespace

nlohmann::json plan_batch_warmup(const WarmupPlanOptions& o) {
  const fs::path out = o.out.empty() ? o.cbs_dir / "plan.toml" : o.out;
  check_plan_out(out, o.overwrite);        // before any work
  require_utf8_path(o.cbs_dir, "--from");  // plan.json and plan.toml name it
  const CbsFile cbs = read_cbs_file(o.cbs_dir);
  const fs::path ref_config = cbs.reference / "config.toml";
  if (!fs::is_regular_file(ref_config))
    throw ConfigError("the reference run of " + (o.cbs_dir / "cbs.json").string() + " (" +
                          cbs.reference.string() + ") has no config.toml",
                      "restore the reference run directory, or rerun lbt cbs on it");
  const ReferenceRun reference = read_reference_run(cbs.reference, cbs.scaling);
  Config config = load_config(ref_config, {}, nullptr);
  const trainer::RunConfig ref = trainer::resolve_run_config(config, reference.world_size);
  const int world = o.workers > 0 ? o.workers : 1;
  const std::int64_t micro = o.workers > 0 ? o.micro_batch : reference.micro_batch;
  const std::int64_t grid = world * micro;
  const std::int64_t max_batch = o.max_batch > 0 ? o.max_batch : reference.train_examples;
  if (grid > max_batch)
    throw ConfigError("lbt plan: the smallest batch of " + std::to_string(world) + " workers x " +
                          std::to_string(micro) + " examples is larger than " +
                          (o.max_batch > 0 ? "--max-batch" : "the training set") + " (" +
                          std::to_string(max_batch) + ")",
                      "pass fewer --workers or a smaller --micro-batch");
  const std::vector<trainer::BatchStep> stages = warmup_stages(cbs.readings, grid, max_batch);

  // The reference's budget in examples, counted in steps of the first stage's batch; the LR at
  // the reference's own reference batch, under the rule the branches measured with.
  const std::int64_t ref_examples =
      trainer::step_budget(ref.train, reference.train_examples, reference.world_size).total_steps *
      reference.global_batch;
  const std::int64_t first = stages.front().batch;
  const std::int64_t steps = (ref_examples + first - 1) / first;
  for (const std::string& s :
       {std::string("train.batch_schedule=steps"),
        "train.batch_steps=" + trainer::format_batch_steps(stages),
        "train.micro_batch=" + std::to_string(micro), std::string("train.accum_steps=0"),
        "train.steps=" + std::to_string(steps), "schedule.scaling=" + cbs.scaling,
        "schedule.reference_batch=" + std::to_string(ref.schedule.reference_batch)}) {
    config.set(s);
  }
  config.validate(lbt_schema());
  const trainer::RunConfig run = trainer::resolve_run_config(config, world);  // as lbt train
  trainer::run_schedule(run, trainer::step_budget(run.train, reference.train_examples, world),
                        nullptr);

  const auto rule = schedules::scaling_rule(cbs.scaling);
  nlohmann::json plan = {{"cbs_dir", fs::absolute(o.cbs_dir).string()},
                         {"reference", cbs.reference.string()},
                         {"workers", world},
                         {"micro_batch", micro},
                         {"max_batch", max_batch},
                         {"scaling", cbs.scaling},
                         {"reference_batch", ref.schedule.reference_batch},
                         {"reference_examples", ref_examples},
                         {"budget_examples", steps * first},
                         {"train_steps", steps},
                         {"batch_steps", trainer::format_batch_steps(stages)},
                         {"stages", nlohmann::json::array()}};
  for (const trainer::BatchStep& s : stages) {
    plan["stages"].push_back(
        {{"from_examples", s.from_examples},
         {"from_reference_step", static_cast<double>(s.from_examples) / reference.global_batch},
         {"batch", s.batch},
         // From the reference's batch: a first stage the grid rounded below it takes the rule's
         // factor too (it printed "x 1" from the first stage while the run took x 0.866).
         {"lr_factor", schedules::scaling_factor(rule, s.batch, ref.schedule.reference_batch)}});
  }
  if (const auto warning = above_measured_warning(cbs.readings, grid)) plan["warning"] = *warning;
  plan["readings"] = nlohmann::json::array();
  for (const CbsReading& r : cbs.readings)
    plan["readings"].push_back(
        {{"step", r.step},
         {"batch", r.batch},
         {"safe_batch", r.safe_batch ? nlohmann::json(*r.safe_batch) : nlohmann::json()}});
  std::ostringstream toml;
  toml << kPlanHeader << comment_text(fs::absolute(o.cbs_dir).string()) << ": a batch warmup "
       << trainer::format_batch_steps(stages) << " (examples:batch), " << cbs.scaling
       << " LR scaling.\n# Run it as is: lbt train --config " << comment_text(out.string()) << "\n"
       << config.resolved_toml();
  io::atomic_write(out, toml.str());
  plan["config"] = fs::absolute(out).string();
  io::atomic_write(plan_json_path(out), plan.dump(2) + "\n");
  return plan;
}

std::string format_warmup_plan(const nlohmann::json& p) {
  std::ostringstream ss;
  ss << "plan: a batch warmup from the critical batch measured in "
     << p["cbs_dir"].get<std::string>() << "\n  " << p["workers"].get<int>()
     << " worker(s) x micro-batch " << p["micro_batch"].get<std::int64_t>() << ", batches up to "
     << p["max_batch"].get<std::int64_t>() << ", LR by " << p["scaling"].get<std::string>()
     << " scaling from the reference's batch " << p["reference_batch"].get<std::int64_t>() << "\n"
     << "   from example   (reference step)      batch   LR x\n";
  for (const auto& s : p["stages"]) {
    char line[128];
    // Appended piece by piece: "(" + std::string&& trips GCC 12's false -Wrestrict.
    std::string step = "(";
    step.append(short_number(s["from_reference_step"].get<double>())).append(")");
    std::snprintf(line, sizeof line, "  %14lld   %16s %10lld   %s\n",
                  static_cast<long long>(s["from_examples"].get<std::int64_t>()), step.c_str(),
                  static_cast<long long>(s["batch"].get<std::int64_t>()),
                  short_number(s["lr_factor"].get<double>()).c_str());
    ss << line;
  }
  ss << "  budget: the reference's " << p["reference_examples"].get<std::int64_t>() << " examples, "
     << p["budget_examples"].get<std::int64_t>()
     << " in whole steps of the first batch (train.steps = " << p["train_steps"].get<std::int64_t>()
     << ")\n"
     << "  config: " << p["config"].get<std::string>() << " (lbt train --config it as is)\n";
  if (p.contains("warning"))
    ss << "  warning: " << p["warning"].get<std::string>()
       << " (a smaller --micro-batch or fewer --workers start lower)\n";
  return ss.str();
}

}  // namespace lbt::experiments
