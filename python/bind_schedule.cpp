// lbt.schedule: the LRs a config (or a named recipe) gives, step by step, from the very
// Schedule object the trainer builds (trainer::resolve_run_config + trainer::run_schedule), as
// `lbt schedule` prints them (cli/cmd_schedule.cpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/lbt_schema.hpp"
#include "python/bindings.hpp"
#include "schedules/schedule_recipes.hpp"
#include "trainer/config/run_config.hpp"

namespace py = pybind11;

namespace lbt::python {
namespace {

struct ScheduleArgs {
  std::string config_or_recipe;
  std::optional<std::int64_t> steps, global_batch, steps_per_epoch, train_size;
  std::vector<std::string> sets;
  int workers = 1;
};

bool is_recipe(const std::string& name) {
  for (const auto& r : schedules::schedule_recipes()) {
    if (r.name == name) return true;
  }
  return false;
}

std::string recipe_names() {
  std::string names;
  for (const auto& r : schedules::schedule_recipes()) names += (names.empty() ? "" : ", ") + r.name;
  return names;
}

// A config file as `lbt schedule --config` loads it, or a recipe over lbt's defaults, loaded the
// same way: a set of train.global_batch alone keeps the LR's reference batch (it took the set
// batch, and goyal's LR at 8192 read 0.1 where lbt schedule reads 6.4).
Config load(const ScheduleArgs& args, std::ostream& notes) {
  if (std::filesystem::is_regular_file(args.config_or_recipe)) {
    return experiments::load_config(args.config_or_recipe, args.sets, &notes);
  }
  if (!is_recipe(args.config_or_recipe)) {
    bad_argument("schedule", "\"" + args.config_or_recipe +
                                 "\" is neither a config file nor a recipe (" + recipe_names() +
                                 ")");
  }
  Config config = Config::from_string("", "recipe " + args.config_or_recipe);
  config.set("schedule.recipe=\"" + args.config_or_recipe + "\"");
  return experiments::load_config(std::move(config), args.sets, &notes);
}

void check_positive(const char* name, const std::optional<std::int64_t>& value) {
  if (value && *value <= 0) {
    bad_argument("schedule",
                 std::string(name) + " must be positive, got " + std::to_string(*value));
  }
}

py::array_t<double> learning_rates(const ScheduleArgs& args) {
  check_positive("steps", args.steps);
  check_positive("global_batch", args.global_batch);
  check_positive("steps_per_epoch", args.steps_per_epoch);
  check_positive("train_size", args.train_size);
  if (args.workers <= 0)
    bad_argument("schedule", "workers must be positive, got " + std::to_string(args.workers));
  if (args.steps_per_epoch && args.train_size) {
    bad_argument("schedule", "give steps_per_epoch or train_size, not both");
  }
  std::ostringstream notes;
  Config config = load(args, notes);
  if (args.steps) config.set("train.steps=" + std::to_string(*args.steps));
  // As lbt schedule: the config's own batch is checked against the workers only where no
  // global_batch replaces it (1026 over 3 workers was refused for the config's 128).
  trainer::RunConfig run =
      trainer::resolve_run_config(config, args.global_batch ? 1 : args.workers);
  // The same run at another batch: only the batch layout changes, the reference batch stays
  // the config's, so the scaling rule shows (as `lbt schedule -b`).
  if (args.global_batch) {
    if (*args.global_batch % args.workers != 0) {
      bad_argument("schedule", "global_batch must be a multiple of workers, got " +
                                   std::to_string(*args.global_batch));
    }
    run = trainer::at_global_batch(run, *args.global_batch, args.workers);
  }
  const trainer::PreviewEpochs epochs =
      trainer::preview_epochs(run, args.steps_per_epoch.value_or(0), args.train_size.value_or(0));
  const trainer::StepBudget budget = trainer::schedule_budget(run.train, epochs.train_examples,
                                                              epochs.steps_per_epoch, args.workers);
  // A warmup longer than the run is shown with a warning, as lbt schedule shows it.
  const schedules::Schedule lr =
      trainer::run_schedule(run, budget, &notes, nullptr, schedules::WarmupPastRun::kNote);

  py::array_t<double> out(budget.total_steps);
  auto view = out.mutable_unchecked<1>();
  for (std::int64_t step = 0; step < budget.total_steps; ++step) view(step) = lr(step);
  // Notes (keys a recipe does not use, a decay past the run) become Python warnings.
  std::istringstream lines(notes.str());
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) PyErr_WarnEx(PyExc_UserWarning, line.c_str(), 1);
  }
  return out;
}

}  // namespace

void bind_schedule(py::module_& m) {
  using namespace pybind11::literals;
  m.def(
      "schedule",
      [](const py::object& config_or_recipe, std::optional<std::int64_t> steps,
         std::optional<std::int64_t> global_batch, std::vector<std::string> sets,
         std::optional<std::int64_t> steps_per_epoch, std::optional<std::int64_t> train_size,
         int workers) {
        // a str or a pathlib.Path
        const auto name =
            py::module_::import("os").attr("fspath")(config_or_recipe).cast<std::string>();
        return learning_rates(
            {name, steps, global_batch, steps_per_epoch, train_size, std::move(sets), workers});
      },
      "config_or_recipe"_a, "steps"_a = py::none(), "global_batch"_a = py::none(), py::kw_only(),
      "sets"_a = std::vector<std::string>{}, "steps_per_epoch"_a = py::none(),
      "train_size"_a = py::none(), "workers"_a = 1,
      R"doc(
The LR at each step (numpy array, step 0 first) that the trainer would use: what
`lbt schedule --config FILE [-b B] [--steps N]` prints.

config_or_recipe: a TOML config file, or a recipe name (goyal, lars, legw, cosine, wsd) over
  lbt's defaults (set optimizer.lr, train.global_batch, ... through `sets`).
steps: the run's length (default: the config's train.steps or train.epochs).
global_batch: the run's global batch (default: the config's train.global_batch, which is
  also the reference batch of schedule.scaling unless schedule.reference_batch is set).
sets: ["section.key=value", ...] as `--set`.
steps_per_epoch / train_size: instead of loading the config's data to count steps per epoch.
workers: ranks the run will use.
)doc");
  m.def(
      "recipes",
      [] {
        py::dict d;
        for (const auto& r : schedules::schedule_recipes()) d[py::str(r.name)] = r.source;
        return d;
      },
      "Named LR-schedule recipes: {name: source}.");
}

}  // namespace lbt::python
