// A run's checks before its first step, without training; see run_check.hpp.
#include "experiments/run_check.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/hessian_probe.hpp"
#include "experiments/output_kind.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/run_lock.hpp"
#include "experiments/train_device.hpp"
#include "experiments/train_run.hpp"
#include "nn/layer_spec.hpp"
#include "noise/online_estimator.hpp"
#include "optim/optimizer_options.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/data/load.hpp"
#include "trainer/device_support.hpp"
#include "trainer/noise_log.hpp"
#include "trainer/run_dir.hpp"
#include "trainer/target_reading.hpp"
#include "trainer/task.hpp"

namespace lbt::experiments {

void check_model_spec(const trainer::TrainConfig& cfg) {
  if (cfg.model_layers.empty()) nn::expand_spec(cfg.model_spec, {});
}

std::unique_ptr<nn::Model> model_for_data(const trainer::TrainConfig& cfg,
                                          const data::Dataset& train) {
  auto model = cfg.model_layers.empty()
                   ? nn::Model::from_spec(cfg.model_spec, cfg.init, train.shape)
                   : nn::Model::from_layers(cfg.model_layers, cfg.init, train.shape);
  if (train.dim != model->input_dim()) {
    throw ConfigError(cfg.model_name() + " takes " + std::to_string(model->input_dim()) +
                          " inputs but " + train.name + " examples have " +
                          std::to_string(train.dim),
                      "make the first layer size " + std::to_string(train.dim));
  }
  if (train.is_classification() && model->output_dim() != train.num_classes) {
    throw ConfigError(
        cfg.model_name() + " has " + std::to_string(model->output_dim()) + " outputs but " +
            train.name + " has " + std::to_string(train.num_classes) + " classes",
        "make the last layer's size (out) " + std::to_string(train.num_classes) +
            (train.num_classes > model->output_dim()
                 ? ", or, if the data has " + std::to_string(model->output_dim()) +
                       " classes, set data.num_classes = " + std::to_string(model->output_dim()) +
                       ": a label out of range is then named with its place "
                       "(0 counts the classes as the largest label + 1)"
                 : std::string()));
  }
  // model.loss and train.target against the data's task; regression output width
  trainer::check_task(cfg, train, model->output_dim());
  model->register_params();  // the parameter table, not the parameters
  return model;
}

void check_activations(const trainer::TrainConfig& cfg, const nn::Model& model,
                       std::int64_t validation_examples, int world) {
  if (cfg.device != "cpu") return;
  // trainer/evaluation.cpp: rank 0's share of the split is the largest, ceil(n / world)
  const std::int64_t share = (validation_examples + world - 1) / world;
  const std::int64_t batch = std::max(cfg.micro_batch, std::min(cfg.eval_batch, share));
  model.check_activations_fit(batch, cfg.threads > 0 ? cfg.threads : default_threads(world));
}

void check_data_suits_config(const trainer::TrainConfig& cfg, const data::Splits& splits) {
  if (cfg.target.enabled() && splits.validation.n == 0) {
    throw ConfigError("train.target " + cfg.target.text() +
                          " is read on the validation split, and it has no examples",
                      "set data.validation_size > 0, or train without a target "
                      "(--set train.target=\"\")");
  }
  // Augmentation crops and flips images; on other examples it did nothing, and the config
  // recorded it as applied (2026-11-29 audit).
  if ((cfg.data.augment_flip || cfg.data.augment_crop_padding > 0) &&
      splits.train.shape.size() != 3) {
    throw ConfigError(
        std::string(cfg.data.augment_flip ? "data.augment.flip" : "data.augment.crop_padding") +
            " applies to images ([C, H, W] examples); " + cfg.data.dataset +
            "'s examples are vectors",
        "drop it, or give .npy features their image shape (data.image_shape)");
  }
}

trainer::StepBudget check_run_at_batch(Config& config, const trainer::RunConfig& run,
                                       const nn::Model& model, const data::Splits& splits,
                                       int world, std::ostream* warnings,
                                       schedules::WarmupPastRun warmup_past_run) {
  const trainer::StepBudget budget = trainer::step_budget(run.train, splits.train.n, world);
  check_activations(run.train, model, splits.validation.n, world);
  check_data_suits_config(run.train, splits);
  trainer::check_ema_horizon(run.train, budget.total_steps, config.source_of("train.ema_horizon"));
  if (run.noise.enabled) {
    read_hessian_options(config);
    noise::choose_method(run.noise, world, run.train.micro_batch, run.train.accum_steps,
                         trainer::per_example_support(model, run.train.device));
  }
  trainer::run_schedule(run, budget, warnings, nullptr, warmup_past_run);
  return budget;
}

void check_optimizer(const trainer::RunConfig& run, const nn::Model& model) {
  optim::make_optimizer(run.optimizer, 1);
  std::vector<Segment> segments = model.store().segments();
  optim::apply_exclusions(run.optimizer, segments);
}

void check_device_parts(Config& config, const trainer::RunConfig& run, const data::Dataset& train) {
  if (run.train.device == "cpu") return;
  trainer::device_model_plan(run, train.shape);
  const bool probe = run.noise.enabled && hessian_probe(read_hessian_options(config), {});
  check_device_run(run, train, probe);
}

void check_run_directory(const std::filesystem::path& dir, const RunDirectoryUse& use,
                         const std::string& resolved_toml) {
  refuse_other_output(dir, OutputKind::kRun, "this run");
  if (use.overwrite && !use.resume) refuse_replacing_a_member_run(dir);
  DirLock::check(dir / "run.lock", "lbt train");  // a run still training there
  trainer::RunDirectory::check(dir, use.overwrite || use.resume);
  if (!use.resume) return;
  refuse_linked_checkpoints(dir);
  trainer::LoadedCheckpoint newest;
  if (!trainer::load_latest_checkpoint(dir / "checkpoints", newest)) {
    if (use.resume_required) nothing_to_resume(dir);
    return;
  }
  read_checkpoint_header(newest, [&] {
    refuse_changed_config(dir, newest.header.at("config").get<std::string>(), resolved_toml);
  });
}

int launched_ranks(const Config& config) {
  Config probe = config;  // reading the backend records it; the run reads it again
  return comm::process_communicator(
             {probe.get_string(Schema::in(trainer::train_keys(), "comm.backend"))})
      .size();
}

void check_run(Config& config, std::ostream* warnings, schedules::WarmupPastRun warmup_past_run) {
  const int world = launched_ranks(config);  // as run_training resolves the run
  const trainer::RunConfig run = trainer::resolve_run_config(config, world);
  check_model_spec(run.train);
  const data::Splits splits = data::load_splits(run.train.data, run.train.seed);
  const auto model = model_for_data(run.train, splits.train);
  check_optimizer(run, *model);
  check_run_at_batch(config, run, *model, splits, world, warnings, warmup_past_run);
  check_device_parts(config, run, splits.train);  // last: the machine's GPU among them
}

}  // namespace lbt::experiments
