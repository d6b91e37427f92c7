// Spec strings (model.hpp lists the forms) expanded into layer lists for build_layers: the
// shorthand of [[model.layers]], so the two cannot drift.
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "nn/layer_spec.hpp"
#include "nn/model_zoo.hpp"
#include "nn/shape.hpp"

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
      if (used != item.size() || v <= 0 || v > 2147483647) throw std::invalid_argument(item);
      sizes.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError(
          "model.spec '" + spec + "': '" + item + "' is not a layer size in [1, 2147483647]",
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
std::vector<std::int64_t> image_input(const std::string& spec,
                                      const std::vector<std::int64_t>& given, Shape3 fallback,
                                      std::int64_t divisor) {
  Shape3 s = fallback;
  if (given.size() == 3)
    s = {given[0], given[1], given[2]};
  else if (given.size() == 2)
    s = {1, given[0], given[1]};
  else if (!given.empty())
    s = {};
  if (s.c <= 0 || s.h < divisor || s.w < divisor || s.h % divisor != 0 || s.w % divisor != 0) {
    throw ConfigError(
        "model.spec '" + spec + "' takes images [C, H, W] with H and W multiples of " +
            std::to_string(divisor) + " (built for " + fallback.text() +
            "), but the dataset's examples have shape " + shape_text(given),
        "use image data (idx, cifar10, or npy/csv with data.image_shape = \"C,H,W\"), "
        "or an mlp:/linear: model for flat features");
  }
  return {s.c, s.h, s.w};
}

// A family's layers from the spec's body (after "family:"); bias: false for ":nobias".
using Expander = ExpandedSpec (*)(const std::string& spec, const std::string& body,
                                  const std::vector<std::int64_t>& input_shape, bool bias);

ExpandedSpec expand_mlp(const std::string& spec, const std::string& body,
                        const std::vector<std::int64_t>&, bool bias) {
  const auto sizes = parse_sizes(spec, body);
  ExpandedSpec out;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    out.layers.push_back({.type = "linear", .out = sizes[i + 1], .bias = bias});
    if (i + 2 < sizes.size()) out.layers.push_back({.type = "relu"});
  }
  out.layers.front().in = sizes.front();  // the string names it; the caller checks the data's
  return out;
}

ExpandedSpec expand_linear(const std::string& spec, const std::string& body,
                           const std::vector<std::int64_t>& input_shape, bool bias) {
  if (parse_sizes(spec, body).size() != 2) {
    throw ConfigError("model.spec '" + spec + "': linear and logistic take exactly IN-OUT",
                      "e.g. linear:784-10 or logistic:784-10");
  }
  return expand_mlp(spec, body, input_shape, bias);
}

ExpandedSpec expand_cnn(const std::string& spec, const std::string& body,
                        const std::vector<std::int64_t>& input_shape, bool bias) {
  if (body.rfind("simple", 0) != 0) {
    throw ConfigError("model.spec '" + spec + "': unknown cnn '" + body + "'",
                      "the cnn family has cnn:simple[-CLASSES] (Shallue et al. 2018)");
  }
  const std::int64_t classes = parse_classes(spec, body.substr(6), "cnn:simple or cnn:simple-100");
  return {simple_cnn_layers(classes, bias), image_input(spec, input_shape, {1, 28, 28}, 4)};
}

ExpandedSpec expand_resnet(const std::string& spec, const std::string& body,
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
  return {cifar_resnet_layers(depth, classes, bias),
          image_input(spec, input_shape, {3, 32, 32}, 4)};
}

struct Family {
  const char* name;
  const char* form;
  Expander expand;
};

// The registry: one line per family.
constexpr Family kFamilies[] = {
    {"mlp", "mlp:IN-H1-...-OUT", expand_mlp},
    {"linear", "linear:IN-OUT", expand_linear},
    {"logistic", "logistic:IN-CLASSES", expand_linear},
    {"cnn", "cnn:simple[-CLASSES]", expand_cnn},
    {"resnet", "resnet:DEPTH[-CLASSES]", expand_resnet},
};

}  // namespace

ExpandedSpec expand_spec(const std::string& spec, const std::vector<std::int64_t>& input_shape) {
  // ":nobias" is a suffix of every family, so the families' own bodies never see it.
  constexpr std::string_view kNoBias = ":nobias";
  const bool bias = !spec.ends_with(kNoBias);
  const std::string core = bias ? spec : spec.substr(0, spec.size() - kNoBias.size());
  const auto colon = core.find(':');
  const std::string family = core.substr(0, colon);
  const std::string body = colon == std::string::npos ? "" : core.substr(colon + 1);
  for (const Family& f : kFamilies) {
    if (family == f.name) return f.expand(spec, body, input_shape, bias);
  }
  std::string forms;
  for (const Family& f : kFamilies) forms += (forms.empty() ? "" : ", ") + std::string(f.form);
  throw ConfigError("model.spec '" + spec + "': unknown model family '" + family + "'",
                    "valid families: " + forms + ", each with an optional :nobias suffix");
}

}  // namespace lbt::nn
