// Image model families; see model_zoo.hpp.
#include "trainer/nn/model_zoo.hpp"

#include "core/error.hpp"
#include "trainer/nn/basic_block.hpp"
#include "trainer/nn/batch_norm.hpp"
#include "trainer/nn/conv2d.hpp"
#include "trainer/nn/pool.hpp"
#include "trainer/nn/relu.hpp"

namespace lbt::nn {

void add_simple_cnn(Model& model, Shape3 in, std::int64_t classes, InitScheme init, bool bias) {
  auto conv1 = std::make_unique<Conv2d>(
      in, Conv2dOptions{.out_channels = 32, .kernel = 5, .padding = 2, .bias = bias}, init);
  const Shape3 c1 = conv1->out_shape();
  model.add(std::move(conv1));
  // The ReLU runs in the max-pool's pass, after it: the same function with the same gradients
  // (ReLU is monotone, so max(relu(a), relu(b)) = relu(max(a, b))) on a quarter of the values.
  auto pool1 = std::make_unique<MaxPool2d>(c1, 2, 2, /*relu=*/true);
  const Shape3 p1 = pool1->out_shape();
  model.add(std::move(pool1));
  auto conv2 = std::make_unique<Conv2d>(
      p1, Conv2dOptions{.out_channels = 64, .kernel = 5, .padding = 2, .bias = bias}, init);
  const Shape3 c2 = conv2->out_shape();
  model.add(std::move(conv2));
  auto pool2 = std::make_unique<MaxPool2d>(c2, 2, 2, /*relu=*/true);
  const Shape3 p2 = pool2->out_shape();
  model.add(std::move(pool2));
  model.add(std::make_unique<Linear>(p2.size(), 1024, init, bias));  // flatten: [64, 7, 7] -> 3136
  model.add(std::make_unique<Relu>(1024));
  model.add(std::make_unique<Linear>(1024, classes, init, bias));
}

void add_cifar_resnet(Model& model, Shape3 in, std::int64_t depth, std::int64_t classes,
                      InitScheme init, bool bias) {
  const std::int64_t n = (depth - 2) / 6;
  auto stem = std::make_unique<Conv2d>(
      in, Conv2dOptions{.out_channels = 16, .kernel = 3, .stride = 1, .padding = 1, .bias = false},
      init);
  Shape3 shape = stem->out_shape();
  model.add(std::move(stem));
  model.add(std::make_unique<BatchNorm>(shape, BatchNormOptions{.relu = true}));
  for (std::int64_t stage = 0; stage < 3; ++stage) {
    const std::int64_t channels = 16 << stage;
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      auto block = std::make_unique<BasicBlock>(shape, channels, stride, init);
      shape = block->out_shape();
      model.add(std::move(block));
    }
  }
  model.add(std::make_unique<GlobalAvgPool>(shape));
  model.add(std::make_unique<Linear>(shape.c, classes, init, bias));
}

}  // namespace lbt::nn
