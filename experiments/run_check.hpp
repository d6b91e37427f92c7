// What `lbt train` checks before its first step, reachable without training: `--check` of
// train, noise and sweep runs these functions, and run_training runs the same ones at startup,
// so a config that --check passes cannot fail there. The model is built as layer shapes only
// (every layer's input against the one before it, no parameter allocated); the data are loaded,
// since the model's input shape, the classes and a budget in epochs come from them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>

#include "core/config.hpp"
#include "nn/model.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/load.hpp"

namespace lbt::experiments {

// A spec string's own errors (an unknown family, a size that is not a number) need no data:
// this reports them before the data are loaded. Shapes against the data: model_for_data.
void check_model_spec(const trainer::TrainConfig& cfg);

// The run's model for the data's examples, its parameters registered but not allocated
// (Model::build allocates them):
// an image model takes their [C, H, W] shape (a layer that cannot take what it is given is a
// ConfigError naming it), and the model's input and output sizes must match the data's.
std::unique_ptr<nn::Model> model_for_data(const trainer::TrainConfig& cfg,
                                          const data::Dataset& train);

// The optimizer's own checks (on a one-float buffer) and its exclusion patterns
// (optimizer.no_decay, no_trust_ratio) against the model's parameter names.
void check_optimizer(const trainer::RunConfig& run, const nn::Model& model);

// The layers' outputs and gradients a CPU run's model holds on each of `world` processes, at
// the largest batch it reserves (the micro-batch, or an evaluation chunk of its share of the
// validation split), against 64 bits and the machine's memory, before anything is allocated:
// a ConfigError naming the widest layer (nn::Model::check_activations_fit). Nothing for a
// device, which keeps its activations on the device.
void check_activations(const trainer::TrainConfig& cfg, const nn::Model& model,
                       std::int64_t validation_examples, int world);

// What the loaded data must have for the config: a validation split for a target (with none,
// data.validation_size = 0, no evaluation can meet it and the run would spend its budget), and
// images for data.augment.*. A ConfigError.
void check_data_suits_config(const trainer::TrainConfig& cfg, const data::Splits& splits);

// The checks of `run` on `world` processes that depend on its global batch: the step budget (a
// batch the data cannot fill), the activations at that batch (check_activations), the EMA's
// horizon, the noise.hessian keys and the noise estimator the batch layout allows, and the
// schedule against the budget (its notes go to `warnings`, nullptr: none; a warmup past the run
// as `warmup_past_run` says: lbt noise shows it). Returns the budget.
trainer::StepBudget check_run_at_batch(
    Config& config, const trainer::RunConfig& run, const nn::Model& model,
    const data::Splits& splits, int world, std::ostream* warnings,
    schedules::WarmupPastRun warmup_past_run = schedules::WarmupPastRun::kError);

// For a run on a device (model.device other than cpu; nothing for cpu): what the device can
// run (trainer/device_support.hpp), the data and the B_noise probe it takes (classification, no
// probe) and, in the program that has the device (lbt-cuda), that the machine can use it.
void check_device_parts(Config& config, const trainer::RunConfig& run, const data::Dataset& train);

// How a run means to use its directory: --overwrite, --resume auto (resume), --resume RUN_DIR
// (resume and resume_required).
struct RunDirectoryUse {
  bool overwrite = false, resume = false, resume_required = false;
};

// What the run's start would refuse of its directory, found without writing (--check): a run
// already there (unless overwritten or resumed), files not a run's where it would be replaced,
// a place no directory can be made; resuming, no intact checkpoint where one is required, and a
// checkpoint whose config differs from `resolved_toml` (the keys --check resolved; the ranks,
// batch layout and threads it was written with are checked at the start).
void check_run_directory(const std::filesystem::path& dir, const RunDirectoryUse& use,
                         const std::string& resolved_toml);

// The ranks this process was launched with, on the communicator of `config`'s comm.backend:
// N under mpirun -np N, else 1 (and then no MPI starts).
int launched_ranks(const Config& config);

// All of it for `config` as `lbt train --check` sees it (on the ranks it was launched with: one
// without mpirun): resolves the config,
// loads the data, builds the model's shapes and checks the run at its batch. Throws the
// ConfigError or DataError the run would stop with (`warmup_past_run`: check_run_at_batch's).
void check_run(Config& config, std::ostream* warnings,
               schedules::WarmupPastRun warmup_past_run = schedules::WarmupPastRun::kError);

}  // namespace lbt::experiments
