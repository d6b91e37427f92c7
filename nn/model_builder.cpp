// The one builder of a Model from a layer list (layer_spec.hpp): it tracks the shape each layer
// gives, constructs the layers, and fuses the pairs lbt runs as one layer (same values, fewer
// passes): a ReLU before a max pool runs in the pool's pass (max(relu(a), relu(b)) =
// relu(max(a, b))), a ReLU after a BatchNorm in the BatchNorm's.
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "core/sizes.hpp"
#include "nn/backend.hpp"
#include "nn/layer_spec.hpp"
#include "nn/model.hpp"

namespace lbt::nn {
namespace {

// What the previous layer gives: an image [C, H, W], or flat features (shape {features, 1, 1}).
struct Flow {
  bool image = false;
  Shape3 shape;
  std::int64_t features() const { return shape.size(); }
  std::string text() const {
    return image ? "images " + shape.text() : std::to_string(shape.c) + " flat features";
  }
};

Flow input_flow(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 3) return {true, {shape[0], shape[1], shape[2]}};
  if (shape.size() == 2) return {true, {1, shape[0], shape[1]}};
  std::int64_t features = 1;
  for (std::int64_t d : shape) features *= d;
  return {false, {shape.empty() ? 0 : features, 1, 1}};
}

// A layer whose sizes pass 64 bits or this machine's memory (check_layer_size): reported with
// the input it was given, not as a shape mismatch.
class LayerTooLarge : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// One layer's parameter count and per-example output, before it is made.
struct LayerSize {
  std::optional<std::int64_t> params;  // nullopt: passes 64 bits
  std::int64_t c = 0, h = 0, w = 0;    // output [C, H, W] ({out, 1, 1} for linear)
};

// The layers with parameters, as their constructors will size them (fields are at most 2^31,
// layer_fields.cpp, so the window arithmetic itself cannot overflow).
std::optional<LayerSize> layer_size(const LayerSpec& l, const Flow& in) {
  const std::int64_t bias = l.bias ? l.out : 0;
  if (l.type == "linear") {
    const auto weights = checked_product({in.features(), l.out});
    return LayerSize{weights ? checked_sum({*weights, bias}) : std::nullopt, l.out, 1, 1};
  }
  if (l.type == "conv") {
    const auto weights = checked_product({l.out, in.shape.c, l.kernel, l.kernel});
    return LayerSize{weights ? checked_sum({*weights, bias}) : std::nullopt, l.out,
                     window_out(in.shape.h, l.kernel, l.stride, l.padding),
                     window_out(in.shape.w, l.kernel, l.stride, l.padding)};
  }
  if (l.type == "residual") {  // two 3x3 convs, a 1x1 projection, BatchNorms (about)
    const auto first = checked_product({l.out, in.shape.c, 10});
    const auto second = checked_product({l.out, l.out, 9});
    return LayerSize{first && second ? checked_sum({*first, *second}) : std::nullopt, l.out,
                     window_out(in.shape.h, 3, l.stride, 1),
                     window_out(in.shape.w, 3, l.stride, 1)};
  }
  return std::nullopt;  // no parameters; an output no larger than its input
}

// Refuses a layer whose parameters (with their gradients) or one example's output (with its
// gradient) pass 64 bits or this machine's memory: it could never be allocated, and a
// bad_alloc would name nothing.
void check_layer_size(const LayerSpec& l, const Flow& in) {
  const std::optional<LayerSize> size = layer_size(l, in);
  if (!size || size->h <= 0 || size->w <= 0) return;  // the constructor says why
  const std::string shape = "[" + std::to_string(size->c) + ", " + std::to_string(size->h) + ", " +
                            std::to_string(size->w) + "]";
  const std::string fix =
      "make it smaller (out/out_channels, kernel, padding) or its input "
      "smaller (a pool or a larger stride before it)";
  const std::int64_t machine = machine_memory_bytes();
  const auto param_bytes = size->params ? checked_product({*size->params, 8}) : std::nullopt;
  if (!param_bytes || *param_bytes > machine) {
    throw LayerTooLarge(
        "gives " + shape + " per example with " +
            (size->params ? std::to_string(*size->params) : std::string("more than 2^63")) +
            " parameters: with their gradients " +
            (param_bytes ? format_bytes(*param_bytes) : std::string("past 2^63 bytes")) +
            ", more than this machine's " + format_bytes(machine) + " (RAM + swap)",
        fix);
  }
  const auto out_bytes = checked_product({size->c, size->h, size->w, 8});
  if (!out_bytes || *out_bytes > machine) {
    throw LayerTooLarge(
        "gives " + shape + " per example: one example's output and its gradient take " +
            (out_bytes ? format_bytes(*out_bytes) : std::string("more than 2^63 bytes")) +
            ", more than this machine's " + format_bytes(machine) + " (RAM + swap)",
        fix);
  }
}

// Builds one layer at a time, each made by the model's backend.
class Builder {
 public:
  Builder(Model& model, Flow flow, InitScheme init)
      : model_(model), backend_(model.backend()), flow_(flow), init_(init) {}

  // Adds layers[i] (and layers[i + 1] where the pair is fused); returns how many it used.
  std::size_t add(const std::vector<LayerSpec>& layers, std::size_t i) {
    at_ = i;
    const LayerSpec& l = layers[i];
    const bool relu_next = i + 1 < layers.size() && layers[i + 1].type == "relu";
    if (l.type == "relu" && i + 1 < layers.size() && layers[i + 1].type == "pool") {
      at_ = i + 1;  // a shape error is the pool's
      add_pool(layers[i + 1], /*relu=*/true);
      return 2;
    }
    check_layer_size(l, flow_);
    if (l.type == "batchnorm") return add_batchnorm(relu_next) ? 2 : 1;
    if (l.type == "linear")
      add_linear(l, i);
    else if (l.type == "conv")
      add_conv(l);
    else if (l.type == "relu")
      model_.add(backend_.relu(flow_.features()));
    else if (l.type == "pool")
      add_pool(l, false);
    else if (l.type == "avgpool")
      add_avgpool(l);
    else if (l.type == "global_avgpool")
      add_global_avgpool();
    else if (l.type == "dropout")
      model_.add(backend_.dropout(flow_.features(), l.p));
    else if (l.type == "residual")
      add_residual(l);
    else
      throw std::logic_error("lbt bug: layer type '" + l.type + "' has no builder");
    return 1;
  }

  const Flow& flow() const { return flow_; }
  std::size_t at() const { return at_; }  // the layer being added

 private:
  void need_image(const char* what) const {
    if (!flow_.image) {
      throw ConfigError("takes images [C, H, W]",
                        std::string(what) +
                            " layers go before the first linear or global_avgpool layer, on image "
                            "data (data.image_shape = \"C,H,W\" for npy/csv)");
    }
  }
  void add_linear(const LayerSpec& l, std::size_t i) {
    std::int64_t in = flow_.features();
    if (l.in > 0 && i == 0) in = l.in;  // a spec string's size, which the caller checks
    if (in <= 0) {
      throw ConfigError("has no input size", "the dataset gives none: start with a spec string");
    }
    model_.add(backend_.linear(in, l.out, init_, l.bias));
    flow_ = {false, {l.out, 1, 1}};
  }
  void add_conv(const LayerSpec& l) {
    need_image("conv");
    add_image_layer(backend_.conv2d(flow_.shape,
                                    Conv2dOptions{.out_channels = l.out,
                                                  .kernel = l.kernel,
                                                  .stride = l.stride,
                                                  .padding = l.padding,
                                                  .bias = l.bias},
                                    init_));
  }
  void add_pool(const LayerSpec& l, bool relu) {
    need_image("pool");
    add_image_layer(backend_.max_pool(flow_.shape, l.kernel, l.stride, relu));
  }
  void add_avgpool(const LayerSpec& l) {
    need_image("avgpool");
    add_image_layer(backend_.avg_pool(flow_.shape, l.kernel, l.stride));
  }
  void add_global_avgpool() {
    need_image("global_avgpool");
    model_.add(backend_.global_avg_pool(flow_.shape));
    flow_ = {false, {flow_.shape.c, 1, 1}};
  }
  // Per channel of an image; per feature of flat input (a [features, 1, 1] image).
  bool add_batchnorm(bool relu) {
    model_.add(backend_.batch_norm(flow_.shape, BatchNormOptions{.relu = relu}));
    return relu;
  }
  void add_residual(const LayerSpec& l) {
    need_image("residual");
    add_image_layer(backend_.residual(flow_.shape, l.out, l.stride, init_));
  }

  void add_image_layer(std::unique_ptr<Layer> layer) {
    flow_.shape = layer->out_shape();
    model_.add(std::move(layer));
  }

  Model& model_;
  const Backend& backend_;
  Flow flow_;
  InitScheme init_;
  std::size_t at_ = 0;
};

}  // namespace

void build_layers(Model& model, const std::vector<LayerSpec>& layers,
                  const std::vector<std::int64_t>& input_shape, const std::string& origin,
                  InitScheme init) {
  Builder builder(model, input_flow(input_shape), init);
  for (std::size_t i = 0; i < layers.size();) {
    const Flow before = builder.flow();
    try {
      i += builder.add(layers, i);
    } catch (const LayerTooLarge& e) {
      const std::size_t at = builder.at();
      throw ConfigError(origin + "[" + std::to_string(at) + "] (" + layers[at].type + ") on " +
                            before.text() + " " + e.what(),
                        e.hint());
    } catch (const ConfigError& e) {
      // The layer's own message ("Conv2d(...) does not fit its input [...]") with its place in
      // the list and what it was given.
      const std::size_t at = builder.at();
      const std::string given =
          at == 0 ? "the data gives" : "layer " + std::to_string(at - 1) + " gives";
      throw ConfigError(origin + "[" + std::to_string(at) + "] (" + layers[at].type +
                            "): " + e.what() + ", but " + given + " " + before.text(),
                        e.hint());
    }
  }
}

std::string coupling_layer(const std::vector<LayerSpec>& layers) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].type == "batchnorm" || layers[i].type == "residual") {
      return "model.layers[" + std::to_string(i) + "] (" + layers[i].type +
             ") has a BatchNorm, which normalises over the batch (examples are coupled)";
    }
  }
  return {};
}

}  // namespace lbt::nn
