// lbt cbs's plan; see cbs_plan.hpp.
#include "experiments/cbs/cbs_plan.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/branch_start.hpp"
#include "experiments/json_file.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/run_checkpoint.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/load.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::string join(const std::vector<std::int64_t>& values) {
  std::string s;
  for (std::int64_t v : values) {
    if (!s.empty()) s += ',';
    s += std::to_string(v);
  }
  return s;
}

// The steps of RUN/checkpoints/step_N.ckpt, ascending.
std::vector<std::int64_t> checkpoint_steps(const fs::path& run_dir) {
  std::vector<std::int64_t> steps;
  for (const fs::path& p : trainer::list_checkpoints(run_dir / "checkpoints")) {
    const std::string stem = p.stem().string();  // step_0000000200
    if (stem.rfind("step_", 0) == 0) steps.push_back(std::stoll(stem.substr(5)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// eval.jsonl's evaluations in order (refinement evaluations left out: they replay steps), each
// at the examples seen: its "examples" field, else step x B (a fixed batch).
std::vector<EvalPoint> read_eval_curve(const fs::path& run_dir, std::int64_t global_batch) {
  std::vector<EvalPoint> curve;
  std::ifstream in = io::open_regular_file(run_dir / "eval.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json e = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object() || e.value("refinement", false) || !e.contains("val_loss") ||
        !e["val_loss"].is_number() || !e.contains("step") || !e["step"].is_number_integer())
      continue;
    const std::int64_t step = e["step"].get<std::int64_t>();
    curve.push_back({e.value("examples", step * global_batch), e["val_loss"].get<double>()});
  }
  return curve;
}

// The reference's ranks as its summary.json records them: a whole number from 1 (0 divided by
// zero, a string threw nlohmann's own message, 1e300 wrapped).
int world_size_of(const fs::path& run_dir) {
  const fs::path summary = run_dir / "summary.json";
  if (!fs::exists(summary)) return 1;
  const nlohmann::json j = read_json_object(summary, "rerun the reference run");
  const nlohmann::json ranks = j.value("world_size", nlohmann::json(1));
  if (!ranks.is_number_integer() || ranks.get<std::int64_t>() < 1 ||
      ranks.get<std::int64_t>() > (1 << 20)) {
    throw DataError(summary.string() + ": world_size " + ranks.dump() +
                        " is not a number of ranks (a whole number from 1)",
                    "rerun the reference run, or restore its summary.json");
  }
  return ranks.get<int>();
}

}  // namespace

ReferenceRun read_reference_run(const fs::path& run_dir, const std::string& scaling_override) {
  ReferenceRun ref;
  ref.dir = run_dir;
  ref.config_path = run_dir / "config.toml";
  if (!fs::is_directory(run_dir) || !fs::is_regular_file(ref.config_path)) {
    throw ConfigError(run_dir.string() + " is not a run directory (no config.toml in it)",
                      "give --from the directory lbt train wrote: config.toml, metrics.jsonl, "
                      "checkpoints/step_N.ckpt");
  }
  Config config = load_config(ref.config_path, {}, nullptr);  // the error lbt train gives
  ref.world_size = world_size_of(run_dir);
  const trainer::RunConfig run = trainer::resolve_run_config(config, ref.world_size);
  if (run.train.adaptive.enabled) {
    throw ConfigError(run_dir.string() + " ran with train.batch_schedule = " +
                          (run.train.adaptive.follows_noise() ? "adaptive" : "steps"),
                      "lbt cbs branches from a run with a fixed batch");
  }
  ref.global_batch = run.train.global_batch;
  ref.micro_batch = run.train.micro_batch;
  ref.seed = static_cast<std::int64_t>(run.train.data_order_seed());
  ref.train_examples = data::load_splits(run.train.data, run.train.seed).train.n;
  ref.scaling = scaling_override.empty() ? run.schedule.scaling : scaling_override;
  ref.checkpoint_steps = checkpoint_steps(run_dir);
  ref.eval_curve = read_eval_curve(run_dir, ref.global_batch);
  return ref;
}

std::int64_t steps_in_common(const std::vector<std::int64_t>& multipliers) {
  std::int64_t largest = 1;
  for (std::int64_t k : multipliers) largest = std::max(largest, k);
  const std::int64_t cap = kMaxSteps * largest;  // the measured length's longest branch
  std::int64_t common = 1;
  for (std::int64_t k : multipliers) {
    common = std::lcm(common, std::max<std::int64_t>(k, 1));
    if (common > cap) return 0;
  }
  return common;
}

BranchLength branch_length(const CbsOptions& options, const ReferenceRun& reference,
                           std::int64_t step) {
  const std::int64_t k_max =
      *std::max_element(options.multipliers.begin(), options.multipliers.end());
  BranchLength b =
      options.examples > 0
          ? BranchLength{options.examples, 0.0, 0.0, 0, "given by --examples"}
          : measured_branch_length(reference.eval_curve, step * reference.global_batch,
                                   std::max<std::int64_t>(k_max, 1) * reference.global_batch);
  // Every branch trains the same examples: a whole number of steps at every multiplier. Each k
  // floored its own steps until 2026-11-29, so --examples 1000 at B = 64 compared k = 8's 512
  // examples with k = 1's 960, biasing the CBS low.
  const std::int64_t unit = steps_in_common(options.multipliers) * reference.global_batch;
  if (unit > 0 && b.examples % unit != 0) {
    const std::int64_t rounded = (b.examples / unit + 1) * unit;
    b.rule += "; rounded up from " + std::to_string(b.examples) + " to " + std::to_string(rounded) +
              ", a whole number of steps at every multiplier";
    b.examples = rounded;
  }
  return b;
}

namespace {

// A checkpoint copied in from another run (or over another step's) was branched from: the
// branches then trained from another point, at another batch or LR, than the run's config.toml
// says (2026-11-29 audit: a step-200 checkpoint named step 300 gave k = 1, 2, 4 branches of
// 42k, 68k and 119k examples; one at B = 128 in a B = 256 run read k = 2 as k = 1).
void check_own_checkpoint(const BranchPoint& p, std::int64_t step, const ReferenceRun& ref,
                          const fs::path& file) {
  const std::string fix = "restore the run's own checkpoint of step " + std::to_string(step) +
                          ", or give --from the run that wrote it";
  if (p.step != step || p.reference_batch != ref.global_batch)
    throw DataError(file.string() + " holds step " + std::to_string(p.step) + " at batch " +
                        std::to_string(p.reference_batch) + ", not this run's step " +
                        std::to_string(step) + " at batch " + std::to_string(ref.global_batch),
                    fix);
  const std::string differs = config_differences(p.config, io::read_file(ref.config_path));
  if (!differs.empty())
    throw DataError(file.string() + " is another run's: its config differs from " +
                        ref.config_path.string() + " (" + differs + ")",
                    fix);
}

void check_steps(const CbsOptions& options, const ReferenceRun& ref) {
  if (options.steps.empty())
    throw ConfigError("--at-steps is empty", "e.g. --at-steps 200,800,3200");
  for (std::int64_t s : options.steps) {
    if (std::find(ref.checkpoint_steps.begin(), ref.checkpoint_steps.end(), s) ==
        ref.checkpoint_steps.end()) {
      throw ConfigError(
          "--at-steps " + std::to_string(s) + ": " + ref.dir.string() +
              " has no checkpoint of step " + std::to_string(s) +
              (ref.checkpoint_steps.empty() ? " (it has none)"
                                            : " (it has steps " + join(ref.checkpoint_steps) + ")"),
          ref.checkpoint_steps.empty()
              ? "rerun the reference with --set train.checkpoint_every=N --set "
                "train.checkpoint_keep=1000"
              : "choose steps from that list, or rerun the reference with train.checkpoint_every "
                "and a larger train.checkpoint_keep");
    }
    // Read now, so a damaged or edited checkpoint is one error before any branch, not the same
    // failure in every branch from it.
    BranchOptions k1;
    k1.checkpoint = trainer::checkpoint_path(ref.dir / "checkpoints", s);
    k1.global_batch = ref.global_batch;
    BranchPoint point;
    try {
      point = read_branch_point(k1);
    } catch (const DataError& e) {  // its hint is lbt train's: "delete it to fall back ..."
      throw DataError(e.what(),
                      "branch from the run's other checkpoints (--at-steps), or restore "
                      "this one: lbt cbs has none to fall back to at this step");
    }
    check_own_checkpoint(point, s, ref, k1.checkpoint);
  }
}

void check_multipliers(const CbsOptions& options, const ReferenceRun& ref, std::int64_t examples) {
  if (steps_in_common(options.multipliers) == 0) {
    throw ConfigError("--multipliers " + join(options.multipliers) + ": no branch length within " +
                          std::to_string(kMaxSteps) +
                          " steps at the largest is a whole number of steps at every "
                          "multiplier, so the branches could not train the same examples",
                      "use multipliers that divide the largest, e.g. 1,2,4,8,16");
  }
  // The critical batch is read from branches at k x B with k > 1 against k = 1; with none, every
  // point read "CBS < 0" (the batch above k = 1 that does not exist).
  if (std::none_of(options.multipliers.begin(), options.multipliers.end(),
                   [](std::int64_t k) { return k > 1; }))
    throw ConfigError(
        "--multipliers has no multiplier above 1: the critical batch is read from "
        "branches at k x B against the run's own batch (k = 1)",
        "e.g. --multipliers 1,2,4,8,16");
  for (std::int64_t k : options.multipliers) {
    if (k < 1)
      throw ConfigError("--multipliers: " + std::to_string(k) + " is not >= 1", "e.g. 1,2,4,8,16");
    const std::int64_t batch = k * ref.global_batch;
    if (batch > ref.train_examples) {
      throw ConfigError(
          "--multipliers " + std::to_string(k) + ": the batch " + std::to_string(k) + " x " +
              std::to_string(ref.global_batch) + " = " + std::to_string(batch) +
              " is larger than the training set (" + std::to_string(ref.train_examples) +
              " examples)",
          "drop multipliers above " + std::to_string(ref.train_examples / ref.global_batch));
    }
    if (examples > 0 && examples / batch < 1) {  // given; a measured length is whole steps
      throw ConfigError("--examples " + std::to_string(examples) +
                            " is less than one step at k = " + std::to_string(k) + " (batch " +
                            std::to_string(batch) + ")",
                        "give --examples at least " + std::to_string(batch));
    }
  }
}

}  // namespace

std::vector<Branch> make_cbs_plan(const CbsOptions& options, const ReferenceRun& ref) {
  if (options.seeds < 1) throw ConfigError("--seeds must be >= 1", "e.g. --seeds 3");
  // The plan holds every branch before one runs: 2^31 seeds ended in std::bad_alloc.
  if (options.seeds > 1000)
    throw ConfigError("--seeds " + std::to_string(options.seeds) +
                          " is more than 1000 (each seed trains a branch per multiplier and step)",
                      "e.g. --seeds 3; a few seeds give the interval");
  // Rounding the length up to whole steps at every multiplier wrapped near 2^63 (every branch
  // then failed "train.steps must be >= 0", blamed on the reference's config).
  if (options.examples > std::int64_t{1'000'000'000'000'000})
    throw ConfigError("--examples " + std::to_string(options.examples) +
                          " is more than 10^15 examples, far past any branch",
                      "give a branch length of a few hundred steps, or leave --examples out to "
                      "measure it");
  if (options.multipliers.empty()) throw ConfigError("--multipliers is empty", "e.g. 1,2,4,8,16");
  check_steps(options, ref);
  check_multipliers(options, ref, options.examples);
  std::vector<std::int64_t> ks = options.multipliers;
  ks.push_back(1);  // the reference branch, always
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  std::vector<Branch> plan;
  for (std::int64_t step : options.steps) {
    const std::int64_t examples = branch_length(options, ref, step).examples;
    for (int s = 0; s < options.seeds; ++s) {
      for (std::int64_t k : ks) {
        Branch b;
        b.step = step;
        b.multiplier = k;
        b.seed_index = s;
        b.order_seed = ref.seed + s;
        b.global_batch = k * ref.global_batch;
        b.steps = examples / b.global_batch;
        b.examples = b.steps * b.global_batch;
        b.name =
            "step" + std::to_string(step) + "_k" + std::to_string(k) + "_s" + std::to_string(s);
        plan.push_back(b);
      }
    }
  }
  return plan;
}

}  // namespace lbt::experiments
