// The pieces of lbt doctor's check (device_check.hpp) shared by its two files: the tolerances
// and comparisons (device_check.cpp) and the models' rows (device_check_models.cpp). CUDA
// builds only; not for use outside the check.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cuda/gpu.hpp"
#include "core/rng.hpp"
#include "experiments/device_check.hpp"

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
