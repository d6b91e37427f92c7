// Models as layer lists ([[model.layers]]): a spec string and its written-out list build the same
// model (same layers, same initial parameters bit for bit, same outputs), and bad lists are
// refused with messages naming the layer's index, its type and the field or shapes.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "nn/layer_fields.hpp"
#include "nn/model.hpp"
#include "support/random.hpp"
#include "trainer/config/train_keys.hpp"

using namespace lbt;

namespace {

// The [[model.layers]] entries of `toml` (a config text), read as lbt train reads them.
std::vector<nn::LayerSpec> layers_of(const std::string& toml) {
  Config config = Config::from_string(toml, "test.toml");
  Schema schema;
  schema.add(trainer::train_keys());
  config.validate(schema);
  return nn::read_layers(config.get_table_list(Schema::in(trainer::train_keys(), "model.layers")),
                         config.source());
}

// The ConfigError message `toml`'s layers give (built for `shape`), or "" when none.
std::string layer_error(const std::string& toml, const std::vector<std::int64_t>& shape) {
  try {
    nn::Model::from_layers(layers_of(toml), nn::InitScheme::kHe, shape);
  } catch (const ConfigError& e) {
    return std::string(e.what()) + " | hint: " + e.hint();
  }
  return "";
}

// Builds both with the same seed and checks layers, parameters and one forward bit for bit.
void expect_same_model(nn::Model& a, nn::Model& b, std::int64_t batch) {
  BOOST_TEST(a.describe() == b.describe());
  auto rng_a = make_rng(11, RngStream::kInit), rng_b = make_rng(11, RngStream::kInit);
  a.build(rng_a);
  b.build(rng_b);
  const auto pa = a.store().params(), pb = b.store().params();
  BOOST_REQUIRE(pa.size() == pb.size());
  BOOST_TEST(std::memcmp(pa.data(), pb.data(), pa.size_bytes()) == 0);
  const auto x = test::normal_vector(static_cast<std::size_t>(batch * a.input_dim()), 3);
  const float* ya = a.forward(x.data(), batch, true);
  const float* yb = b.forward(x.data(), batch, true);
  BOOST_TEST(std::memcmp(ya, yb, sizeof(float) * batch * a.output_dim()) == 0);
}

const char* kSimpleCnnLayers = R"(
[[model.layers]]
type = "conv"
out_channels = 32
kernel = 5
padding = 2
[[model.layers]]
type = "relu"
[[model.layers]]
type = "pool"
kernel = 2
[[model.layers]]
type = "conv"
out_channels = 64
kernel = 5
padding = 2
[[model.layers]]
type = "relu"
[[model.layers]]
type = "pool"
kernel = 2
stride = 2
[[model.layers]]
type = "linear"
out = 1024
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
out = 10
)";

}  // namespace

BOOST_AUTO_TEST_SUITE(model_layers)

BOOST_AUTO_TEST_CASE(spec_strings_and_their_layer_lists_build_the_same_models) {
  const std::vector<std::int64_t> image = {1, 12, 12};
  auto spec = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, image);
  auto listed = nn::Model::from_layers(layers_of(kSimpleCnnLayers), nn::InitScheme::kHe, image);
  expect_same_model(*spec, *listed, 3);

  const std::string mlp_nobias = R"(
[[model.layers]]
type = "linear"
out = 16
bias = false
[[model.layers]]
type = "relu"
[[model.layers]]
type = "linear"
out = 4
bias = false
)";
  auto mlp = nn::Model::from_spec("mlp:20-16-4:nobias", nn::InitScheme::kGlorot);
  auto mlp_listed = nn::Model::from_layers(layers_of(mlp_nobias), nn::InitScheme::kGlorot, {20});
  expect_same_model(*mlp, *mlp_listed, 5);

  const std::string resnet8 = R"(
[[model.layers]]
type = "conv"
out_channels = 16
kernel = 3
padding = 1
bias = false
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "relu"
[[model.layers]]
type = "residual"
channels = 16
[[model.layers]]
type = "residual"
channels = 32
stride = 2
[[model.layers]]
type = "residual"
channels = 64
stride = 2
[[model.layers]]
type = "global_avgpool"
[[model.layers]]
type = "linear"
out = 10
)";
  const std::vector<std::int64_t> rgb = {3, 8, 8};
  auto resnet = nn::Model::from_spec("resnet:8", nn::InitScheme::kHe, rgb);
  auto resnet_listed = nn::Model::from_layers(layers_of(resnet8), nn::InitScheme::kHe, rgb);
  expect_same_model(*resnet, *resnet_listed, 4);
}

BOOST_AUTO_TEST_CASE(dropout_avgpool_and_batchnorm_on_flat_features_build) {
  const std::string toml = R"(
[[model.layers]]
type = "avgpool"
kernel = 2
[[model.layers]]
type = "linear"
out = 8
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "dropout"
p = 0.25
[[model.layers]]
type = "linear"
out = 3
)";
  auto model = nn::Model::from_layers(layers_of(toml), nn::InitScheme::kHe, {2, 4, 6});
  // [2, 4, 6] -> avgpool 2 -> [2, 2, 3] = 12 -> 8 -> 3
  BOOST_TEST(model->input_dim() == 48);
  BOOST_TEST(model->layers()[1]->in_features() == 12);
  BOOST_TEST(model->output_dim() == 3);
  BOOST_TEST(model->layers().size() == 5u);
}

BOOST_AUTO_TEST_CASE(bad_entries_name_the_layer_index_type_and_field) {
  struct Case {
    std::string toml, want1, want2;
  };
  const Case cases[] = {
      {"[[model.layers]]\ntype = \"lineer\"\nout = 3\n",
       "model.layers[0]: unknown layer type 'lineer'", "did you mean 'linear'?"},
      {"[[model.layers]]\ntype = \"relu\"\n[[model.layers]]\ntype = \"linear\"\noutt = 3\n",
       "model.layers[1] (linear): unknown field 'outt'", "did you mean 'out'?"},
      {"[[model.layers]]\ntype = \"conv\"\nout_channels = 4\n",
       "model.layers[0] (conv): missing field 'kernel'", "conv takes out_channels, kernel"},
      {"[[model.layers]]\ntype = \"linear\"\nout = \"ten\"\n",
       "model.layers[0] (linear): out must be an integer in [1, 2147483647], got \"ten\"",
       "linear takes out"},
      {"[[model.layers]]\ntype = \"dropout\"\np = 1.5\n", "(dropout): p must be a number in [0, 1)",
       ""},
      {"[[model.layers]]\nout = 3\n", "model.layers[0]: has no type", "add type = \"linear\""},
      {"[model]\nlayers = []\n", "model.layers has no entries", "model.spec"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.toml) {
      const std::string message = layer_error(c.toml, {4});
      BOOST_TEST(message.find("test.toml: ") == 0u, message);
      BOOST_TEST(message.find(c.want1) != std::string::npos, message);
      BOOST_TEST(message.find(c.want2) != std::string::npos, message);
    }
  }
}

BOOST_AUTO_TEST_CASE(shape_errors_name_the_layer_and_both_shapes) {
  // A conv after a linear: flat features where it takes images.
  const std::string conv_after_linear =
      "[[model.layers]]\ntype = \"linear\"\nout = 10\n"
      "[[model.layers]]\ntype = \"conv\"\nout_channels = 4\nkernel = 3\n";
  std::string m = layer_error(conv_after_linear, {1, 8, 8});
  BOOST_TEST(m.find("model.layers[1] (conv): takes images [C, H, W], but layer 0 gives 10 flat "
                    "features") != std::string::npos,
             m);
  // A pool window larger than the image the conv before it gives.
  const std::string big_pool =
      "[[model.layers]]\ntype = \"conv\"\nout_channels = 4\nkernel = 3\n"
      "[[model.layers]]\ntype = \"pool\"\nkernel = 7\n";
  m = layer_error(big_pool, {1, 8, 8});
  BOOST_TEST(m.find("model.layers[1] (pool): MaxPool2d(k7 s7) does not fit its input [4, 6, 6], "
                    "but layer 0 gives images [4, 6, 6]") != std::string::npos,
             m);
  // The first layer is told what the data gives.
  m = layer_error("[[model.layers]]\ntype = \"pool\"\nkernel = 2\n", {784});
  BOOST_TEST(m.find("model.layers[0] (pool): takes images [C, H, W], but the data gives 784 flat "
                    "features") != std::string::npos,
             m);
}

BOOST_AUTO_TEST_CASE(the_resolved_config_carries_the_layers) {
  Config config = Config::from_string(kSimpleCnnLayers, "test.toml");
  const auto tables = config.get_table_list(Schema::in(trainer::train_keys(), "model.layers"));
  BOOST_TEST(tables.size() == 9u);
  const std::string resolved = config.resolved_toml();
  BOOST_TEST(resolved.find("out_channels = 64") != std::string::npos, resolved);
  // Read back, the resolved text gives the same list.
  Config again = Config::from_string(resolved, "resolved.toml");
  const auto tables_again = again.get_table_list(Schema::in(trainer::train_keys(), "model.layers"));
  BOOST_TEST(tables_again.size() == 9u);
  // A layer list that is not a list of tables of scalars is a type error.
  Config bad = Config::from_string("[model]\nlayers = [1, 2]\n", "bad.toml");
  Schema schema;
  schema.add(trainer::train_keys());
  BOOST_CHECK_THROW(bad.validate(schema), ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
