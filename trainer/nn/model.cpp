// Sequential model and the spec parser; see model.hpp.
#include "trainer/nn/model.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "trainer/nn/model_zoo.hpp"
#include "trainer/nn/relu.hpp"

namespace lbt::nn {
namespace {

std::vector<std::int64_t> parse_sizes(const std::string& spec, const std::string& body) {
  std::vector<std::int64_t> sizes;
  std::stringstream ss(body);
  std::string item;
  while (std::getline(ss, item, '-')) {
    try {
      std::size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v <= 0) throw std::invalid_argument(item);
      sizes.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError("model.spec '" + spec + "': '" + item + "' is not a positive layer size",
                        "write sizes joined by '-', e.g. mlp:784-512-512-10");
    }
  }
  if (sizes.size() < 2) {
    throw ConfigError("model.spec '" + spec + "' needs an input and an output size",
                      "e.g. mlp:784-512-512-10 or linear:784-10");
  }
  return sizes;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Optional "-CLASSES" after a family's fixed word: "simple" -> 10, "simple-100" -> 100.
std::int64_t parse_classes(const std::string& spec, const std::string& rest, const char* form) {
  if (rest.empty()) return 10;
  try {
    std::size_t used = 0;
    long long v = std::stoll(rest.substr(1), &used);
    if (rest[0] == '-' && used == rest.size() - 1 && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError("model.spec '" + spec + "': cannot read the class count '" + rest + "'",
                    std::string("write ") + form);
}

// The image shape [C, H, W] an image family is built for: the dataset's (a 2-D [H, W] shape
// gets one channel) or the family's default; it must be divisible by `divisor` (the model's
// total downsampling) so every pooling/stride-2 stage lines up as in the paper.
Shape3 image_input(const std::string& spec, const std::vector<std::int64_t>& given, Shape3 fallback,
                   std::int64_t divisor) {
  if (given.empty()) return fallback;
  Shape3 s;
  if (given.size() == 3)
    s = {given[0], given[1], given[2]};
  else if (given.size() == 2)
    s = {1, given[0], given[1]};
  if (s.c <= 0 || s.h < divisor || s.w < divisor || s.h % divisor != 0 || s.w % divisor != 0) {
    throw ConfigError(
        "model.spec '" + spec + "' takes images [C, H, W] with H and W multiples of " +
            std::to_string(divisor) + " (built for " + fallback.text() +
            "), but the dataset's examples have shape " + shape_text(given),
        "use image data (idx, cifar10, or npy/csv with data.image_shape = \"C,H,W\"), "
        "or an mlp:/linear: model for flat features");
  }
  return s;
}

// bias: false for a spec ending in ":nobias" (no Linear or Conv2d gets a bias parameter).
using Builder = void (*)(Model&, const std::string& spec, const std::string& body, InitScheme,
                         const std::vector<std::int64_t>& input_shape, bool bias);

void build_mlp(Model& model, const std::string& spec, const std::string& body, InitScheme init,
               const std::vector<std::int64_t>&, bool bias) {
  auto sizes = parse_sizes(spec, body);
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    model.add(std::make_unique<Linear>(sizes[i], sizes[i + 1], init, bias));
    if (i + 2 < sizes.size()) model.add(std::make_unique<Relu>(sizes[i + 1]));
  }
}

void build_linear(Model& model, const std::string& spec, const std::string& body, InitScheme init,
                  const std::vector<std::int64_t>&, bool bias) {
  auto sizes = parse_sizes(spec, body);
  if (sizes.size() != 2) {
    throw ConfigError("model.spec '" + spec + "': linear and logistic take exactly IN-OUT",
                      "e.g. linear:784-10 or logistic:784-10");
  }
  model.add(std::make_unique<Linear>(sizes[0], sizes[1], init, bias));
}

void build_cnn(Model& model, const std::string& spec, const std::string& body, InitScheme init,
               const std::vector<std::int64_t>& input_shape, bool bias) {
  if (body.rfind("simple", 0) != 0) {
    throw ConfigError("model.spec '" + spec + "': unknown cnn '" + body + "'",
                      "the cnn family has cnn:simple[-CLASSES] (Shallue et al. 2018)");
  }
  const std::int64_t classes = parse_classes(spec, body.substr(6), "cnn:simple or cnn:simple-100");
  const Shape3 in = image_input(spec, input_shape, {1, 28, 28}, 4);
  model.set_spec(spec, {in.c, in.h, in.w});
  add_simple_cnn(model, in, classes, init, bias);
}

void build_resnet(Model& model, const std::string& spec, const std::string& body, InitScheme init,
                  const std::vector<std::int64_t>& input_shape, bool bias) {
  const auto dash = body.find('-');
  long long depth = -1;
  try {
    std::size_t used = 0;
    depth = std::stoll(body.substr(0, dash), &used);
    if (used != body.substr(0, dash).size()) depth = -1;
  } catch (const std::exception&) {
  }
  if (depth < 8 || (depth - 2) % 6 != 0) {
    throw ConfigError(
        "model.spec '" + spec + "': a CIFAR ResNet's depth is 6n + 2 (8, 20, 32, 44, 56, 110)",
        "e.g. resnet:8 or resnet:20");
  }
  const std::int64_t classes = parse_classes(
      spec, dash == std::string::npos ? "" : body.substr(dash), "resnet:20 or resnet:20-100");
  const Shape3 in = image_input(spec, input_shape, {3, 32, 32}, 4);
  model.set_spec(spec, {in.c, in.h, in.w});
  add_cifar_resnet(model, in, depth, classes, init, bias);
}

struct Family {
  const char* name;
  const char* form;
  Builder build;
};

// The registry: one line per family.
constexpr Family kFamilies[] = {
    {"mlp", "mlp:IN-H1-...-OUT", build_mlp},
    {"linear", "linear:IN-OUT", build_linear},
    {"logistic", "logistic:IN-CLASSES", build_linear},
    {"cnn", "cnn:simple[-CLASSES]", build_cnn},
    {"resnet", "resnet:DEPTH[-CLASSES]", build_resnet},
};

}  // namespace

std::unique_ptr<Model> Model::from_spec(const std::string& spec, InitScheme init,
                                        const std::vector<std::int64_t>& input_shape) {
  // ":nobias" is a suffix of every family, so the families' own bodies never see it.
  constexpr std::string_view kNoBias = ":nobias";
  const bool bias = !spec.ends_with(kNoBias);
  const std::string core = bias ? spec : spec.substr(0, spec.size() - kNoBias.size());
  auto colon = core.find(':');
  std::string family = core.substr(0, colon);
  std::string body = colon == std::string::npos ? "" : core.substr(colon + 1);
  auto model = std::make_unique<Model>();
  model->spec_ = spec;
  for (const Family& f : kFamilies) {
    if (family == f.name) {
      f.build(*model, spec, body, init, input_shape, bias);
      return model;
    }
  }
  std::string forms;
  for (const Family& f : kFamilies) forms += (forms.empty() ? "" : ", ") + std::string(f.form);
  throw ConfigError("model.spec '" + spec + "': unknown model family '" + family + "'",
                    "valid families: " + forms + ", each with an optional :nobias suffix");
}

void Model::add(std::unique_ptr<Layer> layer) {
  if (!layers_.empty() && layers_.back()->out_features() != layer->in_features()) {
    throw ConfigError(
        "model: " + layer->describe() + " takes " + std::to_string(layer->in_features()) +
        " features but the previous layer gives " + std::to_string(layers_.back()->out_features()));
  }
  layers_.push_back(std::move(layer));
  conv_bn_.emplace_back();
  if (layers_.size() >= 2) {
    auto* conv = dynamic_cast<Conv2d*>(layers_[layers_.size() - 2].get());
    auto* bn = dynamic_cast<BatchNorm*>(layers_.back().get());
    if (conv && bn && conv->writes_output_moments()) conv_bn_[layers_.size() - 2] = {conv, bn};
  }
}

void Model::build(Rng& rng) {
  // Names count per prefix: conv1, conv2, bn1, block1, ..., fc1, fc2.
  std::map<std::string, int> counts;
  for (auto& layer : layers_) {
    const std::string prefix = layer->param_prefix();
    layer->register_params(store_, prefix + std::to_string(++counts[prefix]));
  }
  store_.allocate();
  for (auto& layer : layers_) {
    layer->bind(store_);
    layer->init(rng);
  }
  acts_.resize(layers_.size());
  grads_.resize(layers_.size());
}

void Model::place_grads(std::span<float> memory, std::shared_ptr<void> owner) {
  store_.place_grads(memory, std::move(owner));
  for (auto& layer : layers_) layer->bind(store_);
}

void Model::place_params(std::span<float> memory, std::shared_ptr<void> owner, bool copy_values) {
  store_.place_params(memory, std::move(owner), copy_values);
  for (auto& layer : layers_) layer->bind(store_);
}

void Model::reserve(std::int64_t max_batch) {
  if (max_batch <= capacity_) return;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    acts_[i].resize(static_cast<std::size_t>(max_batch * layers_[i]->out_features()));
    grads_[i].resize(static_cast<std::size_t>(max_batch * layers_[i]->out_features()));
    if (conv_bn_[i].conv)
      moments_.resize(
          std::max(moments_.size(),
                   static_cast<std::size_t>(max_batch * 3 * conv_bn_[i].conv->out_shape().c)));
  }
  capacity_ = max_batch;
}

const float* Model::forward(const float* x, std::int64_t batch, bool train) {
  reserve(batch);
  const float* in = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    if (train && conv_bn_[i].conv)
      conv_bn_[i].conv->forward_with_moments(in, acts_[i].data(), batch, moments_.data());
    else if (train && i > 0 && conv_bn_[i - 1].conv)
      conv_bn_[i - 1].bn->forward_with_moments(in, acts_[i].data(), batch, moments_.data());
    else
      layers_[i]->forward(in, acts_[i].data(), batch, train);
    in = acts_[i].data();
  }
  return in;
}

void Model::backward(const float* x, std::int64_t batch, bool accumulate) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    float* dx = i > 0 ? grads_[i - 1].data() : nullptr;
    if (i > 0 && reads_bn_map(i - 1)) dx = nullptr;  // the BatchNorm's sums only
    if (reads_bn_map(i)) {
      const BatchNormGradMap map = conv_bn_[i].bn->grad_map(acts_[i].data());
      conv_bn_[i].conv->backward_adding(layer_input(i, x), grads_[i + 1].data(), dx, nullptr, batch,
                                        accumulate, &map);
      continue;
    }
    layers_[i]->backward(layer_input(i, x), acts_[i].data(), grads_[i].data(), dx, batch,
                         accumulate);
  }
}

std::vector<std::span<float>> Model::buffers() {
  std::vector<std::span<float>> out;
  for (auto& layer : layers_) {
    for (auto b : layer->buffers()) out.push_back(b);
  }
  return out;
}

void Model::seed_streams(std::uint64_t seed, std::uint64_t rank) {
  std::uint64_t index = 0;
  for (auto& layer : layers_) layer->seed_streams(seed, rank, index);
}

std::vector<std::string> Model::stream_states() const {
  std::vector<std::string> out;
  for (const auto& layer : layers_) out.push_back(layer->stream_state());
  return out;
}

void Model::set_stream_states(const std::vector<std::string>& states) {
  if (states.size() != layers_.size()) {
    throw DataError("saved random-stream states are for " + std::to_string(states.size()) +
                        " layers; this model has " + std::to_string(layers_.size()),
                    "resume with the run's own model spec");
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->set_stream_state(states[i]);
}

std::string Model::describe() const {
  std::string out;
  for (const auto& layer : layers_) out += (out.empty() ? "" : " -> ") + layer->describe();
  return out;
}

}  // namespace lbt::nn
