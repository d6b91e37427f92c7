// Sequential model; see model.hpp. Spec strings expand in model_spec.cpp, and both forms build
// in model_builder.cpp.
#include "nn/model.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/sizes.hpp"
#include "nn/layer_spec.hpp"

namespace lbt::nn {
std::unique_ptr<Model> Model::from_spec(const std::string& spec, InitScheme init,
                                        const std::vector<std::int64_t>& input_shape,
                                        const Backend& backend) {
  ExpandedSpec expanded = expand_spec(spec, input_shape);
  auto model = std::make_unique<Model>(backend);
  build_layers(*model, expanded.layers, expanded.input_shape, "model.spec '" + spec + "'", init);
  model->set_spec(spec, std::move(expanded.input_shape));
  return model;
}

std::unique_ptr<Model> Model::from_layers(const std::vector<LayerSpec>& layers, InitScheme init,
                                          const std::vector<std::int64_t>& input_shape,
                                          const Backend& backend) {
  auto model = std::make_unique<Model>(backend);
  build_layers(*model, layers, input_shape, "model.layers", init);
  model->set_spec("model.layers", input_shape);
  return model;
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

namespace {

// "model.layers" or "model.spec 'cnn:simple'": where the model came from, for messages.
std::string origin_text(const std::string& spec) {
  return spec == "model.layers" ? spec : "model.spec '" + spec + "'";
}

std::string machine_text() {
  return "this machine's " + format_bytes(machine_memory_bytes()) + " (RAM + swap)";
}

}  // namespace

// Layers each fit (model_builder.cpp checks them one by one); together they may not.
void Model::check_params_fit() const {
  const auto bytes = checked_product({static_cast<std::int64_t>(store_.num_params()), 8});
  if (bytes && *bytes <= machine_memory_bytes()) return;
  std::size_t largest = 0, largest_params = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::size_t end =
        i + 1 < layers_.size() ? first_segment_[i + 1] : store_.segments().size();
    std::size_t n = 0;
    for (std::size_t k = first_segment_[i]; k < end; ++k) n += store_.segments()[k].size;
    if (n > largest_params) largest = i, largest_params = n;
  }
  throw ConfigError(origin_text(spec_) + ": " + std::to_string(store_.num_params()) +
                        " parameters with their gradients take " +
                        (bytes ? format_bytes(*bytes) : std::string("past 2^63 bytes")) +
                        ", more than " + machine_text() + "; the largest layer is " +
                        layers_[largest]->describe(),
                    "make the model smaller (fewer or narrower layers)");
}

void Model::register_params() {
  if (!first_segment_.empty()) return;
  // Names count per prefix: conv1, conv2, bn1, block1, ..., fc1, fc2.
  std::map<std::string, int> counts;
  for (auto& layer : layers_) {
    const std::string prefix = layer->param_prefix();
    first_segment_.push_back(store_.segments().size());
    layer->register_params(store_, prefix + std::to_string(++counts[prefix]));
  }
}

void Model::build(Rng& rng) {
  register_params();
  check_params_fit();
  const std::vector<std::size_t>& first_segment = first_segment_;
  store_.allocate(*backend_);
  grads_from_.assign(layers_.size(), kNoParams);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::size_t next =
        i + 1 < layers_.size() ? first_segment[i + 1] : store_.segments().size();
    if (first_segment[i] < next) grads_from_[i] = store_.segments()[first_segment[i]].offset;
  }
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

// The activations reserve() allocates for `batch` examples, refused where they pass 64 bits
// or this machine's memory: the error names the layer with the largest output. With `threads`,
// the layers' workspaces too: ResNet-20 at batch 16384 passed lbt train --check with 34 GiB to
// find on a 23.5 GiB machine, its workspaces twice its activations (2026-11-30 audit).
void Model::check_activations_fit(std::int64_t batch, int threads) const {
  std::optional<std::int64_t> total = 0;
  std::size_t widest = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto bytes = checked_product({batch, layers_[i]->out_features(), 8});
    total = bytes && total ? checked_sum({*total, *bytes}) : std::nullopt;
    if (layers_[i]->out_features() > layers_[widest]->out_features()) widest = i;
  }
  if (!total || *total > machine_memory_bytes()) {
    const Layer& layer = *layers_[widest];
    const auto layer_bytes = checked_product({batch, layer.out_features(), 8});
    throw ConfigError(
        origin_text(spec_) + ": " + layer.describe() + " gives " + layer.out_shape().text() +
            " per example: at batch " + std::to_string(batch) + " its output and gradient take " +
            (layer_bytes ? format_bytes(*layer_bytes) : std::string("past 2^63 bytes")) +
            ", the model's activations " +
            (total ? format_bytes(*total) : std::string("past 2^63 bytes")) + ", more than " +
            machine_text(),
        "lower the batch (train.micro_batch with train.accum_steps, train.eval_batch) or the "
        "layer's size; lbt memory --config FILE shows every part");
  }
  if (threads <= 0) return;
  const std::int64_t workspace = workspace_bytes(batch, threads);
  const auto both = checked_sum({*total, workspace});
  if (both && *both <= machine_memory_bytes()) return;
  throw ConfigError("at batch " + std::to_string(batch) + " the model's activations (" +
                        format_bytes(*total) + ") and its layers' workspaces (" +
                        format_bytes(workspace) + ", " + std::to_string(threads) +
                        " threads) take more than " + machine_text(),
                    "lower train.micro_batch (with train.accum_steps) or train.eval_batch; "
                    "lbt memory --config FILE shows every part");
}

void Model::reserve(std::int64_t max_batch) {
  if (max_batch <= capacity_) return;
  check_activations_fit(max_batch);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    // Growing only: what the buffers held is rewritten by the next forward and backward.
    const auto size = static_cast<std::size_t>(max_batch * layers_[i]->out_features());
    acts_[i] = backend_->allocate(size);
    grads_[i] = backend_->allocate(size);
    if (conv_bn_[i].conv)
      moments_.resize(
          std::max(moments_.size(),
                   static_cast<std::size_t>(max_batch * 3 * conv_bn_[i].conv->out_shape().c)));
  }
  capacity_ = max_batch;
}

std::int64_t Model::activation_floats_per_example() const {
  std::int64_t floats = 0;
  std::int64_t moments = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    floats += 2 * layers_[i]->out_features();
    if (conv_bn_[i].conv) moments = std::max(moments, 3 * conv_bn_[i].conv->out_shape().c);
  }
  return floats + moments;
}

// As reserve() allocates: acts_ and grads_ per layer, moments_ at the widest pair.
std::int64_t Model::activation_bytes(std::int64_t batch) const {
  std::int64_t total = 0, moments = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    total += 2 * aligned_buffer_bytes(batch * layers_[i]->out_features());
    if (conv_bn_[i].conv) moments = std::max(moments, batch * 3 * conv_bn_[i].conv->out_shape().c);
  }
  return total + aligned_buffer_bytes(moments);
}

std::int64_t Model::workspace_bytes(std::int64_t batch, int threads) const {
  std::int64_t total = 0;
  for (const auto& layer : layers_) total += layer->workspace_bytes(batch, threads);
  return total;
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

void Model::backward(const float* x, std::int64_t batch, bool accumulate,
                     const GradsReady& on_ready) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    backward_layer(i, x, batch, accumulate);
    if (on_ready && grads_from_[i] != kNoParams) on_ready(grads_from_[i]);
  }
}

void Model::backward_layer(std::size_t i, const float* x, std::int64_t batch, bool accumulate) {
  float* dx = i > 0 ? grads_[i - 1].data() : nullptr;
  if (i > 0 && reads_bn_map(i - 1)) dx = nullptr;  // the BatchNorm's sums only
  if (reads_bn_map(i)) {
    const BatchNormGradMap map = conv_bn_[i].bn->grad_map(acts_[i].data());
    conv_bn_[i].conv->backward_adding(layer_input(i, x), grads_[i + 1].data(), dx, nullptr, batch,
                                      accumulate, &map);
    return;
  }
  layers_[i]->backward(layer_input(i, x), acts_[i].data(), grads_[i].data(), dx, batch, accumulate);
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
