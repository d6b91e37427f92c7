// Image model families for the spec strings (model_spec.cpp): Shallue et al. 2018's simple CNN
// and He et al. 2016's CIFAR ResNets, as layer lists for build_layers.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/layer_spec.hpp"

namespace lbt::nn {

// Shallue et al. 2018 (arXiv:1811.03600), "Measuring the Effects of Data Parallelism on
// Neural Network Training", Appendix (model details), Simple CNN for MNIST and Fashion-MNIST:
//   conv 5x5 32 'same' + ReLU -> max-pool 2x2 s2 -> conv 5x5 64 'same' + ReLU -> max-pool
//   2x2 s2 -> fully connected 1024 + ReLU -> fully connected CLASSES; no dropout, no BN.
// (build_layers runs each conv's ReLU after its max-pool, in the pool's pass: the same
// function on a quarter of the values.) bias: false drops every conv's and linear's bias.
std::vector<LayerSpec> simple_cnn_layers(std::int64_t classes, bool bias = true);

// He et al. 2016 (arXiv:1512.03385) Sec. 4.2: conv 3x3 16 + BN + ReLU, then 3 stages of n
// BasicBlocks with 16, 32, 64 channels (stride 2 at the start of stages 2 and 3), global
// average pooling, fully connected CLASSES. Depth 6n + 2: resnet:8 (n = 1), resnet:20 (n = 3).
// The convolutions have no bias (a BatchNorm's shift follows each); bias: false drops the last
// linear's too (resnet:20:nobias).
std::vector<LayerSpec> cifar_resnet_layers(std::int64_t depth, std::int64_t classes,
                                           bool bias = true);

}  // namespace lbt::nn
