// [[model.layers]] entries -> LayerSpecs; see layer_fields.hpp.
#include "nn/layer_fields.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/nearest.hpp"

namespace lbt::nn {
namespace {

enum class FieldKind { kCount, kNonNegative, kBool, kProbability };

struct Field {
  const char* name;
  FieldKind kind;
  const char* fallback;  // TOML text of the default; nullptr: required
  // Where the value goes; ints and bools as they are, p as a double.
  void (*assign)(LayerSpec&, double);
};

void set_out(LayerSpec& l, double v) {
  l.out = static_cast<std::int64_t>(v);
}
void set_kernel(LayerSpec& l, double v) {
  l.kernel = static_cast<std::int64_t>(v);
}
void set_stride(LayerSpec& l, double v) {
  l.stride = static_cast<std::int64_t>(v);
}
void set_padding(LayerSpec& l, double v) {
  l.padding = static_cast<std::int64_t>(v);
}
void set_bias(LayerSpec& l, double v) {
  l.bias = v != 0.0;
}
void set_p(LayerSpec& l, double v) {
  l.p = v;
}

struct LayerType {
  const char* name;
  std::vector<Field> fields;
};

// The table: one line per type. A pool's stride defaults to its kernel (read_entry).
const std::vector<LayerType>& layer_types() {
  using enum FieldKind;
  static const std::vector<LayerType> types = {
      {"linear", {{"out", kCount, nullptr, set_out}, {"bias", kBool, "true", set_bias}}},
      {"conv",
       {{"out_channels", kCount, nullptr, set_out},
        {"kernel", kCount, nullptr, set_kernel},
        {"stride", kCount, "1", set_stride},
        {"padding", kNonNegative, "0", set_padding},
        {"bias", kBool, "true", set_bias}}},
      {"relu", {}},
      {"pool", {{"kernel", kCount, nullptr, set_kernel}, {"stride", kCount, "kernel", set_stride}}},
      {"avgpool",
       {{"kernel", kCount, nullptr, set_kernel}, {"stride", kCount, "kernel", set_stride}}},
      {"global_avgpool", {}},
      {"batchnorm", {}},
      {"dropout", {{"p", kProbability, nullptr, set_p}}},
      {"residual", {{"channels", kCount, nullptr, set_out}, {"stride", kCount, "1", set_stride}}},
  };
  return types;
}

std::string fields_text(const LayerType& t) {
  std::string out;
  for (const Field& f : t.fields) {
    out += (out.empty() ? "" : ", ") + std::string(f.name);
    if (f.fallback) out += " = " + std::string(f.fallback);
  }
  return out.empty() ? std::string(t.name) + " takes no fields"
                     : std::string(t.name) + " takes " + out;
}

// Sizes and counts stay within int: the kernels index with it, and products of a few such
// fields (a conv's weights) then stay within 64 bits for the builder's checks.
constexpr std::int64_t kMaxField = 2147483647;

const char* kind_text(FieldKind kind) {
  switch (kind) {
    case FieldKind::kCount:
      return "an integer in [1, 2147483647]";
    case FieldKind::kNonNegative:
      return "an integer in [0, 2147483647]";
    case FieldKind::kBool:
      return "true or false";
    case FieldKind::kProbability:
      return "a number in [0, 1)";
  }
  return "?";
}

std::string value_text(const ConfigValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  std::string d = std::to_string(std::get<double>(v));
  return d;
}

// The value as `kind` asks, or nullopt.
std::optional<double> field_value(const ConfigValue& v, FieldKind kind) {
  if (kind == FieldKind::kBool) {
    if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
    return std::nullopt;
  }
  if (kind == FieldKind::kProbability) {
    double p = -1;
    if (const auto* d = std::get_if<double>(&v)) p = *d;
    if (const auto* i = std::get_if<std::int64_t>(&v)) p = static_cast<double>(*i);
    if (p >= 0.0 && p < 1.0) return p;
    return std::nullopt;
  }
  const auto* i = std::get_if<std::int64_t>(&v);
  if (!i || *i < (kind == FieldKind::kCount ? 1 : 0) || *i > kMaxField) return std::nullopt;
  return static_cast<double>(*i);
}

const LayerType& find_type(const ConfigTable& table, const std::string& where) {
  std::vector<std::string> names;
  for (const LayerType& t : layer_types()) names.push_back(t.name);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  const auto it = std::find_if(table.fields.begin(), table.fields.end(),
                               [](const ConfigTable::Field& f) { return f.name == "type"; });
  if (it == table.fields.end() || !std::holds_alternative<std::string>(it->value)) {
    throw ConfigError(
        where + ": " +
            (it == table.fields.end() ? "has no type"
                                      : "type must be a string, got " + value_text(it->value)),
        "add type = \"linear\" (one of: " + all + ")");
  }
  const std::string& type = std::get<std::string>(it->value);
  for (const LayerType& t : layer_types()) {
    if (type == t.name) return t;
  }
  const std::string best = nearest(type, names);
  throw ConfigError(where + ": unknown layer type '" + type + "'",
                    (best.empty() ? "" : "did you mean '" + best + "'? ") + "the types: " + all);
}

LayerSpec read_entry(const ConfigTable& table, const std::string& where_index) {
  const LayerType& type = find_type(table, where_index);
  const std::string where = where_index + " (" + type.name + ")";
  LayerSpec layer{.type = type.name};
  std::vector<std::string> names;
  for (const Field& f : type.fields) names.push_back(f.name);
  bool stride_given = false;
  for (const ConfigTable::Field& given : table.fields) {
    if (given.name == "type") continue;
    const auto f = std::find_if(type.fields.begin(), type.fields.end(),
                                [&](const Field& d) { return given.name == d.name; });
    if (f == type.fields.end()) {
      const std::string best = nearest(given.name, names);
      throw ConfigError(where + ": unknown field '" + given.name + "'",
                        (best.empty() ? "" : "did you mean '" + best + "'? ") + fields_text(type));
    }
    const auto v = field_value(given.value, f->kind);
    if (!v) {
      throw ConfigError(where + ": " + given.name + " must be " + kind_text(f->kind) + ", got " +
                            value_text(given.value),
                        fields_text(type));
    }
    f->assign(layer, *v);
    stride_given = stride_given || given.name == "stride";
  }
  for (const Field& f : type.fields) {
    const bool given = std::any_of(table.fields.begin(), table.fields.end(),
                                   [&](const ConfigTable::Field& g) { return g.name == f.name; });
    if (!f.fallback && !given) {
      throw ConfigError(where + ": missing field '" + std::string(f.name) + "'", fields_text(type));
    }
  }
  const bool pool = layer.type == "pool" || layer.type == "avgpool";
  if (pool && !stride_given) layer.stride = layer.kernel;  // windows side by side
  return layer;
}

}  // namespace

std::vector<LayerSpec> read_layers(const std::vector<ConfigTable>& tables,
                                   std::string_view source) {
  if (tables.empty()) {
    throw ConfigError(std::string(source) + ": model.layers has no entries",
                      "add [[model.layers]] tables, or remove model.layers and set model.spec");
  }
  std::vector<LayerSpec> layers;
  for (std::size_t i = 0; i < tables.size(); ++i)
    layers.push_back(
        read_entry(tables[i], std::string(source) + ": model.layers[" + std::to_string(i) + "]"));
  return layers;
}

std::string layer_types_text() {
  std::string out;
  for (const LayerType& t : layer_types()) {
    std::string fields;
    for (const Field& f : t.fields) fields += (fields.empty() ? "" : ", ") + std::string(f.name);
    out += (out.empty() ? "" : " | ") + std::string(t.name) +
           (fields.empty() ? "" : " (" + fields + ")");
  }
  return out;
}

}  // namespace lbt::nn
