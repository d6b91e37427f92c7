// Image model families; see model_zoo.hpp.
#include "nn/model_zoo.hpp"

namespace lbt::nn {

std::vector<LayerSpec> simple_cnn_layers(std::int64_t classes, bool bias) {
  return {
      {.type = "conv", .out = 32, .kernel = 5, .padding = 2, .bias = bias},
      {.type = "relu"},
      {.type = "pool", .kernel = 2, .stride = 2},
      {.type = "conv", .out = 64, .kernel = 5, .padding = 2, .bias = bias},
      {.type = "relu"},
      {.type = "pool", .kernel = 2, .stride = 2},
      {.type = "linear", .out = 1024, .bias = bias},  // flatten: [64, 7, 7] -> 3136
      {.type = "relu"},
      {.type = "linear", .out = classes, .bias = bias},
  };
}

std::vector<LayerSpec> cifar_resnet_layers(std::int64_t depth, std::int64_t classes, bool bias) {
  const std::int64_t n = (depth - 2) / 6;
  std::vector<LayerSpec> layers = {
      {.type = "conv", .out = 16, .kernel = 3, .stride = 1, .padding = 1, .bias = false},
      {.type = "batchnorm"},
      {.type = "relu"},
  };
  for (std::int64_t stage = 0; stage < 3; ++stage) {
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      layers.push_back({.type = "residual", .out = 16 << stage, .stride = stride});
    }
  }
  layers.push_back({.type = "global_avgpool"});
  layers.push_back({.type = "linear", .out = classes, .bias = bias});
  return layers;
}

}  // namespace lbt::nn
