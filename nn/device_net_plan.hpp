// How the GPU's network (nn/cuda/device_net.hpp) lays a list of layers over the CPU model's flat
// parameters: per layer its kind, input and output shapes, and the offset of each of its
// parameters, read off the CPU model's segment table in order. Plain C++ (no CUDA): tests/nn
// checks it against the CPU model's own table and layers on every machine, so a GPU network's
// weights are the CPU model's by construction.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "nn/layer_options.hpp"
#include "nn/layer_spec.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

enum class DeviceOpKind {
  kConv,
  kMaxPool,
  kAvgPool,
  kGlobalAvgPool,
  kRelu,
  kBatchNorm,
  kResidual,
  kLinear
};

struct DeviceOpPlan {
  DeviceOpKind kind;
  Shape3 in, out;                       // a Linear's: {features, 1, 1}
  std::int64_t kernel = 0, stride = 1;  // pools: the window; residual: the block's stride
  Conv2dOptions conv;                   // kConv
  // The layer's parameters' offsets into the flat buffers, in the CPU layer's order: conv and
  // linear weight[, bias]; batchnorm gamma, beta; residual conv1, bn1 gamma, beta, conv2, bn2
  // gamma, beta[, projection conv, gamma, beta].
  std::vector<std::int64_t> params;
  // The first two of them, or -1: a conv's or linear's weight and bias, a batchnorm's gamma
  // and beta (a residual block reads all of `params`).
  std::int64_t weight() const { return params.empty() ? -1 : params[0]; }
  std::int64_t bias() const { return params.size() > 1 ? params[1] : -1; }
};

// layers: conv, pool and avgpool (stride = kernel), global_avgpool, relu, batchnorm, residual
// and linear, ending in a linear; input: one example's [C, H, W]. Throws ConfigError for a layer
// the GPU does not run or a table the layers do not fit.
std::vector<DeviceOpPlan> plan_device_net(const std::vector<LayerSpec>& layers, Shape3 input,
                                          const std::vector<Segment>& segments);

// One line naming the op and its shapes, for timings and reports: "conv 1->32 5x5 on 28x28",
// "conv 16->32 3x3 /2 on 16x16", "maxpool 2x2 on 32x28x28", "linear 3136->1024",
// "residual 16->32 /2 on 16x16", "relu on 32x28x28".
std::string describe(const DeviceOpPlan& op);

}  // namespace lbt::nn
