// Branching from a checkpoint; see branch_start.hpp.
#include "experiments/branch_start.hpp"

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/run_checkpoint.hpp"
#include "schedules/scaling.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::experiments {
namespace {

trainer::LoadedCheckpoint load_reference(const BranchOptions& options) {
  if (!std::filesystem::is_regular_file(options.checkpoint)) {
    throw ConfigError("train.branch_from: " + options.checkpoint.string() + " is not a file",
                      "name a checkpoint of the reference run, e.g. RUN/checkpoints/step_200.ckpt");
  }
  return trainer::read_checkpoint(options.checkpoint);
}

BranchPoint point_of(const trainer::LoadedCheckpoint& ck, const BranchOptions& options) {
  BranchPoint p;
  p.step = ck.header.at("step").get<std::int64_t>();
  p.reference_batch = ck.header.at("global_batch").get<std::int64_t>();
  if (p.step < 0 || p.reference_batch < 1) {
    throw DataError(ck.path.string() + ": step " + std::to_string(p.step) + " at batch " +
                        std::to_string(p.reference_batch) + " is no point of a run",
                    "branch from a checkpoint lbt train wrote");
  }
  if (options.global_batch < p.reference_batch || options.global_batch % p.reference_batch != 0) {
    throw ConfigError("train.branch_from: the branch's train.global_batch " +
                          std::to_string(options.global_batch) + " is not a whole multiple of " +
                          ck.path.string() + "'s batch " + std::to_string(p.reference_batch),
                      "branch at k x " + std::to_string(p.reference_batch) + " with k = 1, 2, ...");
  }
  p.multiplier = options.global_batch / p.reference_batch;
  p.config = ck.header.at("config").get<std::string>();
  return p;
}

// The reference run's schedule as its own run built it: its resolved config (saved in the
// checkpoint), its world size and budget.
schedules::Schedule reference_schedule(const trainer::LoadedCheckpoint& ck,
                                       const BranchOptions& options) {
  Config config = Config::from_string(ck.header.at("config").get<std::string>(), ck.path.string());
  config.validate(lbt_schema());
  const int world = ck.header.value("world_size", 1);
  const trainer::RunConfig run = trainer::resolve_run_config(config, world);
  if (run.train.adaptive.enabled) {
    throw ConfigError(ck.path.string() + " is from a run with train.batch_schedule = " +
                          (run.train.adaptive.follows_noise() ? "adaptive" : "steps"),
                      "branch from a run with a fixed batch");
  }
  const trainer::StepBudget budget = trainer::step_budget(run.train, options.train_examples, world);
  return trainer::run_schedule(run, budget, nullptr);
}

// The branch's start: the checkpoint's parameters, optimizer state, layer buffers and random
// streams, and its loop state at the checkpoint's step.
trainer::LoopState branch_state(const trainer::LoadedCheckpoint& ck, const BranchOptions& options,
                                nn::Model& model, optim::Optimizer& optimizer) {
  const BranchPoint p = point_of(ck, options);
  refuse_changed_data("cannot branch from " + ck.path.string(), ck, options.data);
  const auto& h = ck.header;
  ck.copy_to("params", model.store().params());
  for (auto& [name, buffer] : optimizer.state().buffers())
    ck.copy_to("optim/" + name, buffer.span());
  const auto buffers = model.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i)
    ck.copy_to("layer_buffer/" + std::to_string(i), buffers[i]);
  model.set_stream_states(h.at("streams").get<std::vector<std::string>>());
  trainer::LoopState state;
  state.step = p.step;
  // The examples the reference had seen: summary.json's examples then count the data position.
  state.examples_seen = h.value("examples_seen", p.step * p.reference_batch);
  state.divergence.first_loss = h.at("first_loss");
  state.divergence.skips_in_a_row = h.at("skips_in_a_row");
  state.divergence.skipped_steps = h.at("skipped_steps");
  state.outcome.steps = p.step;
  state.outcome.examples = state.examples_seen;
  return state;
}

}  // namespace

BranchPoint read_branch_point(const BranchOptions& options) {
  const trainer::LoadedCheckpoint ck = load_reference(options);
  BranchPoint p;
  read_checkpoint_header(ck, [&] { p = point_of(ck, options); });
  return p;
}

schedules::Schedule branch_schedule(const BranchOptions& options) {
  if (options.noise_enabled) {
    throw ConfigError("train.branch_from: a branch does not measure the noise scale",
                      "set noise.enabled=false for the branch (the reference run's noise.jsonl "
                      "has it)");
  }
  const trainer::LoadedCheckpoint ck = load_reference(options);
  BranchPoint p;
  schedules::Schedule reference;
  read_checkpoint_header(ck, [&] {
    p = point_of(ck, options);
    reference = reference_schedule(ck, options);
  });
  // Merrill et al. 2025 rescale the LR with the batch; lbt's rule is the run's schedule.scaling.
  const double factor = schedules::scaling_factor(schedules::scaling_rule(options.scaling),
                                                  options.global_batch, p.reference_batch);
  return [reference, factor, p](std::int64_t step) {
    return factor * reference(p.step + (step - p.step) * p.multiplier);
  };
}

trainer::LoopState start_branch(const BranchOptions& options, nn::Model& model,
                                optim::Optimizer& optimizer) {
  const trainer::LoadedCheckpoint ck = load_reference(options);
  trainer::LoopState state;
  read_checkpoint_header(ck, [&] { state = branch_state(ck, options, model, optimizer); });
  return state;
}

}  // namespace lbt::experiments
