// The pieces of lbt doctor's check (device_check.hpp) shared by its files: the tolerances and
// comparisons (device_check.cpp), the MLP's rows and the batches and training loops
// (device_check_models.cpp), and the networks' rows (device_check_nets.cpp). CUDA builds only;
// not for use outside the check.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/params.hpp"
#include "core/rng.hpp"
#include "experiments/device_check.hpp"
#include "nn/cuda/device_model.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"

namespace lbt::experiments::device_check {

// Float32 round-off of a sum of k products, read against the largest output: sqrt(k) eps is
// the typical size, a few times that the tail over many outputs.
double sum_tolerance(std::int64_t k);

// The largest |gpu - cpu| and the largest |cpu| (a NaN is an infinite error).
DeviceCheckRow compare(std::string op, std::span<const float> gpu, std::span<const float> cpu,
                       double tolerance, std::string why = {});

// Marks rows[first...] as vouching only for runs with these layer types (DeviceCheckRow::layers).
void cover(std::vector<DeviceCheckRow>& rows, std::size_t first, std::vector<std::string> layers);

std::vector<float> uniform(std::size_t n, Rng& rng, float lo = -1.0f, float hi = 1.0f);
std::vector<float> download(const float* device, std::size_t n);

// A batch of random examples in [0, 1) and labels, on the host and on the device.
struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
  lbt::cuda::DeviceArray<float> dx;
  lbt::cuda::DeviceArray<std::int32_t> dlabels;
};
Batch random_batch(Rng& rng, std::int64_t batch, std::int64_t features, std::int32_t classes);

// `steps` SGD-momentum steps (momentum 0.9) of the CPU's model, or the GPU's, on the batches in
// turn, with softmax cross-entropy over 10 classes.
void train_cpu(nn::Model& model, optim::Optimizer& opt, const std::vector<Segment>& segments,
               const std::vector<Batch>& batches, std::int64_t batch, std::int64_t steps,
               double lr = 0.01);
void train_gpu(const lbt::cuda::Gpu& gpu, nn::cuda::DeviceModel& model,
               const std::vector<Segment>& segments, std::size_t num_params,
               const std::vector<Batch>& batches, std::int64_t batch, std::int64_t steps,
               double lr = 0.01);
// The summed cross-entropy of both backends' models on the batches, in eval mode: {cpu, gpu}.
std::pair<double, double> losses(nn::Model& cpu_model, nn::cuda::DeviceModel& gpu_model,
                                 const std::vector<Batch>& batches, std::int64_t batch);
// The training row: the loss both reach, read against how far it fell (check_mlp_training).
DeviceCheckRow training_row(const std::string& op, double start, double cpu_end, double gpu_end,
                            double params_relative, double tolerance = 1e-3);

// The MLP 784-512-512-10's forward, loss and backward at B = 64, and 100 training steps.
void check_mlp_step(const lbt::cuda::Gpu& gpu, Rng& rng, std::uint64_t seed,
                    std::vector<DeviceCheckRow>& rows);
void check_mlp_training(const lbt::cuda::Gpu& gpu, Rng& rng, std::uint64_t seed,
                        std::vector<DeviceCheckRow>& rows);
// The simple CNN's logits at B = 32 and 20 training steps.
void check_cnn(const lbt::cuda::Gpu& gpu, Rng& rng, std::uint64_t seed,
               std::vector<DeviceCheckRow>& rows);
// ResNet-8's logits and gradients in train mode at B = 32, its BatchNorms' running statistics,
// and 20 training steps.
void check_resnet(const lbt::cuda::Gpu& gpu, Rng& rng, std::uint64_t seed,
                  std::vector<DeviceCheckRow>& rows);
// Average pools and a BatchNorm over features, in a small network: logits and gradients in
// train mode, running statistics, logits in eval mode.
void check_small_net(const lbt::cuda::Gpu& gpu, Rng& rng, std::uint64_t seed,
                     std::vector<DeviceCheckRow>& rows);

}  // namespace lbt::experiments::device_check
