// Image model families for Model::from_spec: Shallue et al. 2018's simple CNN and He et al.
// 2016's CIFAR ResNets. Each appends its layers to an empty Model for a given input [C, H, W].
#pragma once
#include "trainer/nn/model.hpp"
#include "trainer/nn/shape.hpp"

namespace lbt::nn {

// Shallue et al. 2018 (arXiv:1811.03600), "Measuring the Effects of Data Parallelism on
// Neural Network Training", Appendix (model details), Simple CNN for MNIST and Fashion-MNIST:
//   conv 5x5 32 'same' + ReLU -> max-pool 2x2 s2 -> conv 5x5 64 'same' + ReLU -> max-pool
//   2x2 s2 -> fully connected 1024 + ReLU -> fully connected CLASSES; no dropout, no BN.
// (Each conv's ReLU runs after its max-pool, in the pool's pass: the same function on a
// quarter of the values.)
// bias: false drops every conv's and fully connected layer's bias (cnn:simple:nobias).
void add_simple_cnn(Model& model, Shape3 in, std::int64_t classes, InitScheme init,
                    bool bias = true);

// He et al. 2016 (arXiv:1512.03385) Sec. 4.2: conv 3x3 16 + BN + ReLU, then 3 stages of n
// BasicBlocks with 16, 32, 64 channels (stride 2 at the start of stages 2 and 3), global
// average pooling, fully connected CLASSES. Depth 6n + 2: resnet:8 (n = 1), resnet:20 (n = 3).
// The convolutions have no bias (BatchNorm's shift follows each); bias: false drops the final
// fully connected layer's too (resnet:20:nobias).
void add_cifar_resnet(Model& model, Shape3 in, std::int64_t depth, std::int64_t classes,
                      InitScheme init, bool bias = true);

}  // namespace lbt::nn
