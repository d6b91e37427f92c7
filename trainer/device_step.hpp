// model.device = "cuda": the step's arithmetic on a device that keeps the parameters, their
// gradient, the optimizer's state and the weights' EMA for the whole run (trainer/cuda/). The
// loop (loop.cpp) stays the algorithm: it draws the batches, judges divergence, asks the
// schedule and evaluates; the device computes. The host's model, optimizer state and
// LoopState::ema are the device's mirror, written by pull() where the loop reads them
// (snapshots, checkpoints, the run's end) and read back by push() after it restores them.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "nn/model.hpp"
#include "noise/gradient_reader.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_options.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/prefetch.hpp"
#include "trainer/device_support.hpp"

namespace lbt::trainer {

struct ClassificationSums;

class DeviceStep {
 public:
  virtual ~DeviceStep() = default;
  // One micro-batch: forward, softmax cross-entropy x grad_scale, backward into the gradient
  // (added to it when `accumulate`). Returns the loss summed over the examples; `correct` the
  // argmax hits.
  // A batch without features (Features::kRowsOnly) is drawn from the training split the device
  // keeps (keeps_train_split()).
  virtual double forward_backward(const data::Batch& batch, float grad_scale, bool accumulate,
                                  std::int64_t* correct) = 0;
  // Whether the device holds the training split: the loop's batches then carry only rows.
  virtual bool keeps_train_split() const = 0;
  // The step's gradient averaged over the ranks (as it is with one rank; the same floats on every
  // rank), and its |g|^2 summed in double: comm::Communicator::allreduce_sq_norm on the device.
  virtual double allreduce_sq_norm() = 0;
  // The per-example estimator's sums over the last micro-batch, per segment (noise/
  // online_estimator.hpp's ExampleTaps::segment_sums), made on the device; valid until the next
  // call. Only for a step set up with DeviceStepSetup::per_example_noise.
  virtual std::span<const double> per_example_sums(double grad_scale) = 0;
  // The gradient buffer as the noise estimator reads it (per-segment sums on the device).
  virtual noise::GradientReader& gradient_reader() = 0;
  virtual void update(double lr, std::int64_t step) = 0;  // the optimizer, every segment
  // BatchNorm's running statistics as they were before the step's forward passes, kept on the
  // device and put back after a step that is skipped or diverges (the loop's keep_layer_buffers
  // and restore_layer_buffers, loop.cpp): such a step's batch leaves no trace in them.
  virtual void keep_layer_buffers() = 0;
  virtual void restore_layer_buffers() = 0;
  // The device's layer buffers into the host model's, and back: rank 0's become every rank's
  // after each step through the host (a few KB; the loop's share_layer_buffers).
  virtual void pull_layer_buffers(nn::Model& model) = 0;
  virtual void push_layer_buffers(nn::Model& model) = 0;
  // The weights' EMA: ema += alpha (w - ema), where an absent EMA (a fresh run) is first the
  // weights, as the host's (loop_evaluation.cpp, update_ema).
  virtual void update_ema(float alpha) = 0;
  // The sums over examples [begin, end) of the split at the weights, or at their EMA (each rank
  // scores its own share; loop_evaluation.cpp adds them); the split is uploaded once.
  virtual ClassificationSums evaluate(const data::Dataset& split, std::int64_t begin,
                                      std::int64_t end, std::int64_t eval_batch, bool ema) = 0;
  // The device's parameters, layer buffers (BatchNorms' running statistics) and optimizer state
  // into the host's; its EMA into `ema` (left as is while the device has none).
  virtual void pull(nn::Model& model, optim::Optimizer& optimizer, std::vector<float>& ema) = 0;
  // The host's into the device's (after a resume, a branch's start or a snapshot's restore);
  // an empty `ema` leaves the device without one.
  virtual void push(nn::Model& model, const optim::Optimizer& optimizer,
                    const std::vector<float>& ema) = 0;
  virtual std::string describe() const = 0;  // "NVIDIA H100 80GB HBM3, sm_90, 79 GiB"
};

// What a device's step is built from: the host model (its parameter layout and segment table,
// after the optimizer's exclusions), the optimizer's options, the largest batch it will see.
struct DeviceStepSetup {
  const nn::Model& model;
  DeviceModelPlan plan;  // its layers, input shape and, for a plain MLP, its widths
  const optim::OptimizerOptions& optimizer;
  std::int64_t max_batch = 0;  // the larger of the micro-batch and the evaluation batch
  // The training split to keep on the device and draw batches from there; nullptr: every batch
  // brings its features (augmented data: the host augments).
  const data::Dataset* train = nullptr;
  // The noise estimators the run uses: per-example norms (per_example_sums; a plain MLP only),
  // and the two-batch sums of the gradient's changes (gradient_reader). The self-check names
  // them among the run's parts (experiments/cuda_training.cpp).
  bool per_example_noise = false, two_batch_noise = false;
  // The run's ranks: each steps on its own device, or ranks share one (device_placement.hpp);
  // the gradients are averaged across them every step.
  comm::Communicator* comm = nullptr;
};

using DeviceStepFactory = std::function<std::unique_ptr<DeviceStep>(const DeviceStepSetup&)>;

// Throws ConfigError where this machine cannot step on the device at all (no usable GPU):
// what the factory checks first, for `lbt train --check`.
using DeviceProbe = std::function<void()>;

// The program that can run a device registers its factory and probe before main's work
// (lbt-cuda: cli/cuda_main.cpp); lbt itself registers none.
void register_device_step(const std::string& device, DeviceStepFactory factory, DeviceProbe probe);
// nullptr when this program has no factory (or probe) for `device`.
const DeviceStepFactory* device_step_factory(const std::string& device);
const DeviceProbe* device_probe(const std::string& device);

}  // namespace lbt::trainer
