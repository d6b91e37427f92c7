// A model as a list of layers: what [[model.layers]] in a config describes, and what every spec
// string (mlp:..., cnn:simple, resnet:20, ...) expands into. build_layers is the one builder of
// both forms, so a spec string and its written-out list give the same model bit for bit.
// Input sizes are not written: each layer takes what the one before it gives (the first, the
// dataset's example shape), and a layer that cannot take it is a ConfigError naming both.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/cpu/linear.hpp"

namespace lbt::nn {

class Model;

// One layer; which fields mean something depends on `type` (layer_fields.cpp lists them).
//   linear          out, bias                      fully connected; flattens an image input
//   conv            out_channels, kernel, stride, padding, bias
//   relu
//   pool            kernel, stride (= kernel)      max pooling
//   avgpool         kernel, stride (= kernel)
//   global_avgpool                                 [C, H, W] -> [C]
//   batchnorm                                      per channel (per feature on flat input)
//   dropout         p
//   residual        channels, stride               He et al. 2016's BasicBlock
struct LayerSpec {
  std::string type;
  std::int64_t out = 0;  // linear: out features; conv: out_channels; residual: channels
  std::int64_t kernel = 0, stride = 1, padding = 0;
  bool bias = true;
  double p = 0.0;  // dropout probability
  // linear from a spec string: the input size the string names (mlp:784-...), checked against
  // the data by the caller as before; 0 (every [[model.layers]] entry): the previous layer's.
  std::int64_t in = 0;
};

// Appends `layers` to an empty `model` for examples of `input_shape` ([C, H, W], [H, W] for one
// channel, or [features]); model_builder.cpp says which pairs run fused. Throws ConfigError
// "ORIGIN[i] (type): ..., but ... gives ..." on a layer that does not fit what it is given.
void build_layers(Model& model, const std::vector<LayerSpec>& layers,
                  const std::vector<std::int64_t>& input_shape, const std::string& origin,
                  InitScheme init);

// The layers of a spec string, with the input shape the family is built for (empty for the flat
// families). Throws ConfigError naming the spec and its valid forms.
struct ExpandedSpec {
  std::vector<LayerSpec> layers;
  std::vector<std::int64_t> input_shape;
};
ExpandedSpec expand_spec(const std::string& spec, const std::vector<std::int64_t>& input_shape);

// Why per-example gradients of the list's model are not separable: the first layer that
// normalises over the batch (batchnorm, residual), named; "" when none does.
std::string coupling_layer(const std::vector<LayerSpec>& layers);

}  // namespace lbt::nn
