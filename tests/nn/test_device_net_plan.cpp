// The GPU network's plan (nn/device_net_plan.hpp) against the CPU model built from the same
// layers: its layers' parameter offsets are the CPU model's segments in order, each residual
// block's nine (or six) the CPU block's by name, its shapes the CPU layers'; layers the GPU does
// not run and tables that do not fit are refused. No GPU needed.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "nn/cpu/basic_block.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/device_net_plan.hpp"
#include "nn/model.hpp"

using namespace lbt;
using nn::DeviceOpKind;

namespace {

struct Built {
  std::unique_ptr<nn::Model> cpu;
  std::vector<nn::DeviceOpPlan> plan;
};

Built build(const std::vector<nn::LayerSpec>& layers, nn::Shape3 input) {
  Built b{nn::Model::from_layers(layers, nn::InitScheme::kHe, {input.c, input.h, input.w}), {}};
  Rng init = make_rng(1, RngStream::kInit);
  b.cpu->build(init);
  b.plan = nn::plan_device_net(layers, input, b.cpu->store().segments());
  return b;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(device_net_plan)

BOOST_AUTO_TEST_CASE(the_plan_lays_its_layers_over_the_cpu_models_parameters) {
  const std::vector<nn::LayerSpec> small = {{.type = "conv", .out = 8, .kernel = 3, .padding = 1},
                                            {.type = "relu"},
                                            {.type = "avgpool", .kernel = 2, .stride = 2},
                                            {.type = "linear", .out = 32},
                                            {.type = "batchnorm"},
                                            {.type = "relu"},
                                            {.type = "linear", .out = 10}};
  struct Case {
    std::vector<nn::LayerSpec> layers;
    nn::Shape3 input;
  };
  const std::vector<Case> cases = {{nn::expand_spec("cnn:simple", {1, 28, 28}).layers, {1, 28, 28}},
                                   {nn::expand_spec("resnet:8", {3, 32, 32}).layers, {3, 32, 32}},
                                   {nn::expand_spec("resnet:20", {3, 32, 32}).layers, {3, 32, 32}},
                                   {nn::expand_spec("resnet:8", {1, 28, 28}).layers, {1, 28, 28}},
                                   {small, {3, 12, 12}}};
  const char* block_names[] = {".conv1.weight",         ".bn1.weight",         ".bn1.bias",
                               ".conv2.weight",         ".bn2.weight",         ".bn2.bias",
                               ".shortcut.conv.weight", ".shortcut.bn.weight", ".shortcut.bn.bias"};
  for (const Case& c : cases) {
    const Built b = build(c.layers, c.input);
    const std::vector<Segment>& segments = b.cpu->store().segments();
    // every parameter offset, in order, is the next segment's
    std::size_t next = 0;
    for (const nn::DeviceOpPlan& op : b.plan)
      for (std::int64_t offset : op.params) {
        BOOST_TEST_REQUIRE(next < segments.size());
        BOOST_TEST(offset == static_cast<std::int64_t>(segments[next++].offset));
      }
    BOOST_TEST(next == segments.size());
    // each block's parameters are the CPU block's, by name; its shapes and the convolutions' too
    std::vector<nn::Shape3> cpu_blocks, cpu_convs, plan_blocks, plan_convs;
    for (const auto& layer : b.cpu->layers()) {
      if (const auto* block = dynamic_cast<const nn::BasicBlock*>(layer.get()))
        cpu_blocks.push_back(block->out_shape());
      if (const auto* conv = dynamic_cast<const nn::Conv2d*>(layer.get()))
        cpu_convs.push_back(conv->out_shape());
    }
    std::size_t first = 0;  // the op's first segment
    for (const nn::DeviceOpPlan& op : b.plan) {
      if (op.kind == DeviceOpKind::kResidual) {
        plan_blocks.push_back(op.out);
        BOOST_TEST_REQUIRE((op.params.size() == 6 || op.params.size() == 9));
        for (std::size_t k = 0; k < op.params.size(); ++k)
          BOOST_TEST(segments[first + k].name.ends_with(block_names[k]), segments[first + k].name);
      }
      if (op.kind == DeviceOpKind::kConv) plan_convs.push_back(op.out);
      first += op.params.size();
    }
    BOOST_TEST((plan_blocks == cpu_blocks));
    BOOST_TEST((plan_convs == cpu_convs));
    BOOST_TEST(b.plan.back().out.size() == b.cpu->layers().back()->out_features());
  }
}

BOOST_AUTO_TEST_CASE(layers_the_gpu_does_not_run_and_tables_that_do_not_fit_are_refused) {
  auto refused = [](const std::vector<nn::LayerSpec>& layers, const std::vector<Segment>& table,
                    const std::string& part) {
    try {
      nn::plan_device_net(layers, {1, 8, 8}, table);
    } catch (const ConfigError& e) {
      BOOST_TEST(std::string(e.what()).find(part) != std::string::npos, e.what());
      return;
    }
    BOOST_TEST(false, "not refused: " << part);
  };
  const std::vector<nn::LayerSpec> pooled = {{.type = "pool", .kernel = 3, .stride = 2},
                                             {.type = "linear", .out = 10}};
  refused(pooled, {}, "pool and avgpool (stride = kernel)");
  const std::vector<nn::LayerSpec> dropout = {{.type = "dropout", .p = 0.5},
                                              {.type = "linear", .out = 10}};
  refused(dropout, {}, "is dropout");
  // cnn:simple's layers over resnet:8's table
  const Built resnet = build(nn::expand_spec("resnet:8", {1, 28, 28}).layers, {1, 28, 28});
  refused(nn::expand_spec("cnn:simple", {1, 28, 28}).layers, resnet.cpu->store().segments(),
          "does not fit the CPU model's parameter table");
  // a table with a segment to spare
  std::vector<Segment> extra = resnet.cpu->store().segments();
  extra.push_back(make_segment("spare", 1u << 20, 4, ParamKind::kWeight));
  refused(nn::expand_spec("resnet:8", {1, 28, 28}).layers, extra, "uses every parameter");
}

// The labels a GPU timing prints (bench/gpu_layer_times.cpp): Shallue et al.'s simple CNN on
// Fashion-MNIST's 1x28x28 images, and ResNet-8's stem and a strided block on 3x32x32.
BOOST_AUTO_TEST_CASE(each_op_is_named_with_its_shapes) {
  const nn::Shape3 image{1, 28, 28};
  std::vector<std::string> names;
  for (const nn::DeviceOpPlan& op :
       build(nn::expand_spec("cnn:simple", {1, 28, 28}).layers, image).plan)
    names.push_back(nn::describe(op));
  const std::vector<std::string> simple_cnn = {
      "conv 1->32 5x5 on 28x28",  "relu on 32x28x28", "maxpool 2x2 on 32x28x28",
      "conv 32->64 5x5 on 14x14", "relu on 64x14x14", "maxpool 2x2 on 64x14x14",
      "linear 3136->1024",        "relu on 1024x1x1", "linear 1024->10"};
  BOOST_TEST(names == simple_cnn, boost::test_tools::per_element());
  const Built resnet = build(nn::expand_spec("resnet:8", {3, 32, 32}).layers, {3, 32, 32});
  BOOST_TEST(nn::describe(resnet.plan.front()) == "conv 3->16 3x3 on 32x32");
  std::vector<std::string> blocks;
  for (const nn::DeviceOpPlan& op : resnet.plan)
    if (op.kind == DeviceOpKind::kResidual) blocks.push_back(nn::describe(op));
  const std::vector<std::string> resnet_blocks = {
      "residual 16->16 on 32x32", "residual 16->32 /2 on 32x32", "residual 32->64 /2 on 16x16"};
  BOOST_TEST(blocks == resnet_blocks, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
