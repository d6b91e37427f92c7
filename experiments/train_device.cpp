// make_device_step; see train_device.hpp.
#include "experiments/train_device.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "noise/online_estimator.hpp"
#include "trainer/device_support.hpp"
#include "trainer/noise_log.hpp"

namespace lbt::experiments {
namespace {

void check_device_data(const trainer::TrainConfig& cfg, const data::Dataset& train, bool probe) {
  if (!train.is_classification())
    throw ConfigError("model.device=" + cfg.device + " trains classifiers only; " + train.name +
                          " has float targets",
                      "set model.device=cpu");
  if (probe)
    throw ConfigError("model.device=" + cfg.device + " has no B_noise probe (noise.hessian)",
                      "set noise.hessian.every=0, or model.device=cpu");
}

}  // namespace

std::unique_ptr<trainer::DeviceStep> make_device_step(const trainer::RunConfig& run,
                                                      comm::Communicator& comm,
                                                      const data::Splits& splits,
                                                      const nn::Model& model, bool probe) {
  const trainer::TrainConfig& cfg = run.train;
  if (cfg.device == "cpu") return nullptr;
  trainer::DeviceModelPlan plan = trainer::device_model_plan(run, splits.train.shape);
  check_device_data(cfg, splits.train, probe);
  const trainer::DeviceStepFactory* factory = trainer::device_step_factory(cfg.device);
  if (!factory)
    throw ConfigError("model.device=" + cfg.device + " runs in lbt-cuda, not in this program",
                      "run lbt train (it starts lbt-cuda), or set model.device=cpu");
  const std::int64_t max_batch = std::max(cfg.micro_batch, cfg.eval_batch);
  // Augmented batches are made on the host; plain ones are drawn on the device.
  const bool augmented = cfg.data.augment_crop_padding > 0 || cfg.data.augment_flip;
  const noise::NoiseMethod noise =
      run.noise.enabled
          ? noise::choose_method(run.noise, comm.size(), cfg.micro_batch, cfg.accum_steps,
                                 trainer::per_example_support(model, cfg.device))
          : noise::NoiseMethod{};
  return (*factory)({model, std::move(plan), run.optimizer, max_batch,
                     augmented ? nullptr : &splits.train, noise.per_example, noise.two_batch,
                     comm.size() > 1 ? &comm : nullptr});
}

void check_device_run(const trainer::RunConfig& run, const data::Dataset& train, bool probe) {
  if (run.train.device == "cpu") return;
  check_device_data(run.train, train, probe);
  if (const trainer::DeviceProbe* usable = trainer::device_probe(run.train.device)) (*usable)();
}

}  // namespace lbt::experiments
