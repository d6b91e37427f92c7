// Sequential model and the spec parser; see model.hpp.
#include "trainer/nn/model.hpp"

#include <sstream>

#include "core/error.hpp"
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

}  // namespace

std::unique_ptr<Model> Model::from_spec(const std::string& spec, InitScheme init) {
  auto colon = spec.find(':');
  std::string family = spec.substr(0, colon);
  std::string body = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto model = std::make_unique<Model>();
  model->spec_ = spec;
  if (family == "mlp") {
    auto sizes = parse_sizes(spec, body);
    for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
      model->add(std::make_unique<Linear>(sizes[i], sizes[i + 1], init));
      if (i + 2 < sizes.size()) model->add(std::make_unique<Relu>(sizes[i + 1]));
    }
  } else if (family == "linear") {
    auto sizes = parse_sizes(spec, body);
    if (sizes.size() != 2) {
      throw ConfigError("model.spec '" + spec + "': linear takes exactly IN-OUT",
                        "e.g. linear:784-10");
    }
    model->add(std::make_unique<Linear>(sizes[0], sizes[1], init));
  } else {
    throw ConfigError("model.spec '" + spec + "': unknown model family '" + family + "'",
                      "valid families: mlp:IN-H1-...-OUT, linear:IN-OUT");
  }
  return model;
}

void Model::add(std::unique_ptr<Layer> layer) {
  if (!layers_.empty() && layers_.back()->out_features() != layer->in_features()) {
    throw ConfigError("model: " + layer->describe() + " takes " +
                      std::to_string(layer->in_features()) + " features but the previous layer gives " +
                      std::to_string(layers_.back()->out_features()));
  }
  layers_.push_back(std::move(layer));
}

void Model::build(Rng& rng) {
  int linear_index = 0;
  for (auto& layer : layers_) {
    if (dynamic_cast<Linear*>(layer.get())) {
      layer->register_params(store_, "fc" + std::to_string(++linear_index));
    } else {
      layer->register_params(store_, "layer");
    }
  }
  store_.allocate();
  for (auto& layer : layers_) {
    layer->bind(store_);
    layer->init(rng);
  }
  acts_.resize(layers_.size());
  grads_.resize(layers_.size());
}

void Model::reserve(std::int64_t max_batch) {
  if (max_batch <= capacity_) return;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    acts_[i].resize(static_cast<std::size_t>(max_batch * layers_[i]->out_features()));
    grads_[i].resize(static_cast<std::size_t>(max_batch * layers_[i]->out_features()));
  }
  capacity_ = max_batch;
}

const float* Model::forward(const float* x, std::int64_t batch, bool train) {
  reserve(batch);
  const float* in = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(in, acts_[i].data(), batch, train);
    in = acts_[i].data();
  }
  return in;
}

void Model::backward(const float* x, std::int64_t batch, bool accumulate) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    float* dx = i > 0 ? grads_[i - 1].data() : nullptr;
    layers_[i]->backward(layer_input(i, x), acts_[i].data(), grads_[i].data(), dx, batch,
                         accumulate);
  }
}

std::string Model::describe() const {
  std::string out;
  for (const auto& layer : layers_) out += (out.empty() ? "" : " -> ") + layer->describe();
  return out;
}

}  // namespace lbt::nn
