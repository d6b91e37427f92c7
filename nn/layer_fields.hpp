// The fields of each [[model.layers]] type, declared once: from this table come the checks of a
// config's layer list (unknown type or field with did-you-mean, missing field, wrong type or
// range, each naming the layer's index and type) and the one-line list in `lbt train --help`.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/config_schema.hpp"
#include "nn/layer_spec.hpp"

namespace lbt::nn {

// The layers of `tables` (Config::get_table_list of model.layers), checked field by field.
// Throws ConfigError "SOURCE: model.layers[i] (type): ..." with a hint naming the valid fields.
std::vector<LayerSpec> read_layers(const std::vector<ConfigTable>& tables, std::string_view source);

// "linear (out, bias = true) | conv (...) | relu | ...": every type with its fields.
std::string layer_types_text();

}  // namespace lbt::nn
