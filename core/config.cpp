// Config over toml++; see config.hpp.
#include "core/config.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/error.hpp"
#include "core/nearest.hpp"
#include "core/toml_text.hpp"
#include "core/toml_values.hpp"

namespace lbt {

using namespace toml_values;  // config.cpp is the one user of these helpers

namespace {

// lbt's deepest key has 3 parts (data.augment.crop_padding); one of thousands would overflow the
// stack in toml++ (toml_text.hpp, deepest_key), so a key past this is refused before parsing.
constexpr std::size_t kMostKeyParts = 16;

std::string too_deep_hint() {
  return "lbt's keys have 2 or 3 parts (data.augment.crop_padding; `lbt train --help` lists "
         "them): fix the key";
}

}  // namespace

struct Config::Impl {
  toml::table root;      // as given: file + overrides
  toml::table resolved;  // every key read, with its effective value
  std::string source = "<defaults>";
  std::set<std::string, std::less<>> overridden;  // keys given by set() (--set)
  std::set<std::string, std::less<>> defaulted;   // keys given by set_default() (a recipe)
  std::map<std::string, std::string, std::less<>> set_text;  // set()'s value, as given

  template <class T, class Extract>
  T read(const Config& config, const KeySpec& spec, KeyType type, Extract extract,
         std::optional<T> derived);
};

Config::Config() : impl_(std::make_unique<Impl>()) {}
Config::~Config() = default;
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::Config(const Config& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}

Config Config::from_string(std::string_view text, std::string source) {
  Config config;
  if (const KeyDepth deep = deepest_key(text); deep.parts > kMostKeyParts) {
    throw ConfigError(source + ":" + std::to_string(deep.line) + ": a key of " +
                          std::to_string(deep.parts) + " dotted parts",
                      too_deep_hint());
  }
  try {
    config.impl_->root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << source << ":" << e.source().begin.line << ":" << e.source().begin.column;
    throw ConfigError(where.str() + ": invalid TOML: " + std::string(e.description()),
                      "fix the syntax at that line (strings need quotes: key = \"value\")");
  }
  config.impl_->source = std::move(source);
  return config;
}

Config Config::from_file(const std::filesystem::path& path) {
  std::error_code ec;  // a directory opens, and read as an empty config: lbt's defaults
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError("config file " + path.string() + " is a directory",
                      "give the config's file; presets live in experiments/configs/");
  }
  std::ifstream probe(path);
  if (!probe) {
    throw ConfigError("cannot read config file " + path.string(),
                      "check the path; presets live in experiments/configs/");
  }
  // A config is a few kilobytes; reading on past a bound keeps /dev/zero or a wrong file of
  // gigabytes (--config data.bin) from filling memory before the parser could say so.
  constexpr std::size_t kMostBytes = 16 << 20;
  std::string text;
  char chunk[1 << 16];
  while (probe.read(chunk, sizeof chunk) || probe.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(probe.gcount()));
    if (text.size() > kMostBytes) {
      throw ConfigError("config file " + path.string() + " is larger than 16 MiB: not a config",
                        "check the path; presets live in experiments/configs/");
    }
  }
  return from_string(text, path.string());
}

void Config::set(std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ConfigError("--set expects key=value, got '" + std::string(assignment) + "'",
                      "for example --set optimizer.lr=0.1");
  }
  std::string key(assignment.substr(0, eq));
  std::string value(assignment.substr(eq + 1));
  key.erase(key.find_last_not_of(" \t") + 1);
  if (const KeyDepth deep = deepest_key(assignment); deep.parts > kMostKeyParts) {
    throw ConfigError("--set " + std::string(assignment.substr(0, 60)) + "...: a key of " +
                          std::to_string(deep.parts) + " dotted parts",
                      too_deep_hint());
  }
  try {
    toml::table parsed = toml::parse("v = " + value);
    if (parsed.size() != 1)  // a newline, then a key: that key was dropped without a word
      throw ConfigError("--set " + key + "=...: the value holds more than one TOML value",
                        "give one key per --set");
    insert_at(impl_->root, key, std::move(*parsed.get("v")));
  } catch (const toml::parse_error&) {
    if (const ValueProblem problem = unparsed_value_problem(key, value); !problem.what.empty())
      throw ConfigError("--set " + key + "=" + value + ": " + problem.what, problem.fix);
    insert_at(impl_->root, key, value);  // a bare string such as mlp:784-10
  }
  impl_->overridden.insert(key);
  impl_->set_text[key] = value;
}

void Config::set_default(std::string_view assignment) {
  const std::string key(assignment.substr(0, assignment.find('=')));
  if (has(key)) return;
  const auto overridden = impl_->overridden;
  set(assignment);
  impl_->overridden = overridden;
  impl_->defaulted.insert(key);
}

void Config::erase(std::string_view key) {
  erase_at(impl_->root, key);
  erase_at(impl_->resolved, key);
  const std::string prefix = std::string(key) + ".";
  std::erase_if(impl_->overridden,
                [&](const std::string& k) { return k == key || k.starts_with(prefix); });
  std::erase_if(impl_->defaulted,
                [&](const std::string& k) { return k == key || k.starts_with(prefix); });
  std::erase_if(impl_->set_text,
                [&](const auto& kv) { return kv.first == key || kv.first.starts_with(prefix); });
}

namespace {

// The node a getter reads: the configured one, else the default's TOML text parsed into
// `scratch`.
const toml::node* value_node(const toml::table& root, const KeySpec& spec, const Config& config,
                             toml::table& scratch) {
  if (const toml::node* node = find_node(root, spec.key)) return node;
  const std::string text = spec.default_for(config);
  try {
    scratch = toml::parse("v = " + text);
  } catch (const toml::parse_error&) {
    throw std::logic_error("lbt bug: default of " + spec.key + " is not TOML: " + text);
  }
  return scratch.get("v");
}

void expect_type(const KeySpec& spec, KeyType type) {
  if (spec.type != type) {
    throw std::logic_error("lbt bug: " + spec.key + " is declared " + key_type_name(spec.type) +
                           " but read as " + key_type_name(type));
  }
}

[[noreturn]] void fail_type(const Config& config, const KeySpec& spec, const toml::node& node) {
  std::string hint;
  if (spec.type == KeyType::kString) hint = "quote it: " + spec.key + " = \"...\"";
  if (spec.unit.find('.') != std::string::npos) {  // the unit is a key of its own
    hint = "give the number here and the unit in " + spec.unit + ", e.g. " + spec.key +
           " = 5 with " + spec.unit + " = \"epochs\"";
  }
  config.fail(spec.key, key_type_name(spec.type), node_text(node) + " (" + type_name(node) + ")",
              hint);
}

// Whether `node` holds the key's default (a condition may let a default pass, see KeyCondition).
bool holds_default(const toml::node& node, const KeySpec& spec, const Config& config) {
  toml::table none, scratch;
  const toml::node& fallback = *value_node(none, spec, config, scratch);
  const auto a = as_number(node), b = as_number(fallback);
  return a && b ? *a == *b : node_text(node) == node_text(fallback);
}

}  // namespace

template <class T, class Extract>
T Config::Impl::read(const Config& config, const KeySpec& spec, KeyType type, Extract extract,
                     std::optional<T> derived) {
  expect_type(spec, type);
  T value;
  const toml::node* node = find_node(root, spec.key);
  if (!node && derived) {
    value = *derived;
  } else {
    toml::table scratch;
    if (!node) node = value_node(root, spec, config, scratch);
    auto v = extract(*node);
    if (!v) fail_type(config, spec, *node);
    value = *v;
  }
  if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                std::is_same_v<T, std::vector<double>> ||
                std::is_same_v<T, std::vector<std::string>>) {
    insert_at(resolved, spec.key, to_array(value));
  } else {
    insert_at(resolved, spec.key, value);
  }
  return value;
}

double Config::get_double(const KeySpec& spec, std::optional<double> derived) {
  const double value = impl_->read<double>(*this, spec, KeyType::kNumber, as_number, derived);
  // TOML's inf and nan are numbers, and inf passes a check such as ">= 0": weight_decay = inf
  // trained to "diverged", and Adam's eps = inf left the weights where they were (2026-11-29
  // audit). No key means anything by them.
  if (!std::isfinite(value)) fail(spec.key, "a finite number", std::isnan(value) ? "nan" : "inf");
  return value;
}

std::int64_t Config::get_int(const KeySpec& spec, std::optional<std::int64_t> derived) {
  return impl_->read<std::int64_t>(
      *this, spec, KeyType::kInt, [](const toml::node& n) { return n.value_exact<std::int64_t>(); },
      derived);
}

bool Config::get_bool(const KeySpec& spec) {
  return impl_->read<bool>(*this, spec, KeyType::kBool,
                           [](const toml::node& n) { return n.value_exact<bool>(); }, {});
}

std::string Config::get_string(const KeySpec& spec) {
  return impl_->read<std::string>(*this, spec, KeyType::kString,
                                  [](const toml::node& n) { return n.value_exact<std::string>(); },
                                  {});
}

std::vector<std::int64_t> Config::get_int_list(const KeySpec& spec) {
  return impl_->read<std::vector<std::int64_t>>(*this, spec, KeyType::kIntList,
                                                as_list<std::int64_t>, {});
}

std::vector<double> Config::get_double_list(const KeySpec& spec) {
  return impl_->read<std::vector<double>>(*this, spec, KeyType::kNumberList, as_list<double>, {});
}

std::vector<std::string> Config::get_string_list(const KeySpec& spec) {
  return impl_->read<std::vector<std::string>>(*this, spec, KeyType::kStringList,
                                               as_list<std::string>, {});
}

std::vector<ConfigTable> Config::get_table_list(const KeySpec& spec) {
  expect_type(spec, KeyType::kTableList);
  toml::table scratch;
  const toml::node* node = value_node(impl_->root, spec, *this, scratch);
  auto tables = as_table_list(*node);
  if (!tables) fail_type(*this, spec, *node);
  insert_at(impl_->resolved, spec.key, *node->as_array());
  return *tables;
}

bool Config::has(std::string_view key) const {
  return find_node(impl_->root, key) != nullptr;
}

std::string Config::peek_string(std::string_view key, std::string_view fallback) const {
  if (const toml::node* node = find_node(impl_->root, key)) {
    if (auto s = node->value_exact<std::string>()) return *s;
  }
  return std::string(fallback);
}

std::optional<std::int64_t> Config::peek_int(std::string_view key) const {
  const toml::node* node = find_node(impl_->root, key);
  return node ? node->value_exact<std::int64_t>() : std::nullopt;
}

std::optional<double> Config::peek_number(std::string_view key) const {
  const toml::node* node = find_node(impl_->root, key);
  return node ? as_number(*node) : std::nullopt;
}

bool Config::peek_bool(std::string_view key, bool fallback) const {
  const toml::node* node = find_node(impl_->root, key);
  return node ? node->value_exact<bool>().value_or(fallback) : fallback;
}

const std::string& Config::source() const {
  return impl_->source;
}

// The file for a key the file set; "" for one the command line set (--set, or a command's own
// option such as --compare, whose message names it), a recipe's value or a default:
// "FILE: key must be ..." sent the user to a file that did not hold the key (2026-11-30 audit).
std::string Config::source_of(std::string_view key) const {
  const std::string base(key.substr(0, key.find('[')));  // model.layers[0].units: model.layers
  const bool given_elsewhere = impl_->overridden.contains(base) || impl_->defaulted.contains(base);
  return given_elsewhere || !has(base) ? "" : impl_->source;
}

std::vector<std::string> Config::validate(const Schema& schema) {
  std::vector<std::string> leaves;
  collect_leaves(impl_->root, std::nullopt, leaves);
  const std::vector<std::string> sections = schema.sections();
  std::erase_if(leaves, [&](const std::string& leaf) {  // a known section left empty: [model]
    return find_node(impl_->root, leaf)->is_table() &&
           std::binary_search(sections.begin(), sections.end(), leaf);
  });
  // Names, types and allowed values first: the conditions below read the deciding keys.
  for (const auto& leaf : leaves) {
    const KeySpec* spec = schema.find(leaf);
    if (!spec) {
      const std::string source = source_of(leaf);
      schema.fail_unknown(leaf, find_node(impl_->root, leaf)->is_table(),  // [optimiser], empty
                          source.empty() ? "" : source + ": ");
    }
    // --set sweep.slurm_time=04:00:00 parses as TOML's time, 120 as an integer: for a string key,
    // the text given (refused as "a date/time" until 2026-11-29; a file's value keeps its quotes).
    const auto given = impl_->set_text.find(leaf);
    if (spec->type == KeyType::kString && given != impl_->set_text.end() &&
        !find_node(impl_->root, leaf)->is_string() && !find_node(impl_->root, leaf)->is_array())
      insert_at(impl_->root, leaf, given->second);
    const toml::node& node = *find_node(impl_->root, leaf);
    if (!has_type(node, spec->type)) fail_type(*this, *spec, node);
    if (spec->type == KeyType::kString && !spec->allowed.empty()) {
      const std::string value = *node.value_exact<std::string>();
      if (std::find(spec->allowed.begin(), spec->allowed.end(), value) == spec->allowed.end()) {
        std::string list;
        for (const auto& a : spec->allowed) list += (list.empty() ? "" : ", ") + a;
        const std::string best = nearest(value, spec->allowed);
        fail(leaf, "one of: " + list, "'" + value + "'",
             best.empty() ? "pick one of the values above"
                          : "did you mean '" + best + "'? (" + leaf + " = \"" + best + "\")");
      }
    }
  }
  std::vector<std::string> notes;
  for (const auto& leaf : leaves) {
    const KeySpec& spec = *schema.find(leaf);
    if (spec.applies(*this)) continue;
    const toml::node& value = *find_node(impl_->root, leaf);
    if (spec.condition->defaults_pass && holds_default(value, spec, *this)) continue;
    std::string setting;
    bool decided_by_override = false;
    for (const auto& key : spec.condition->decided_by) {
      if (!has(key)) continue;
      const toml::node& node = *find_node(impl_->root, key);
      setting += (setting.empty() ? "" : ", ") + std::string(key) + " = " + node_text(node);
      decided_by_override = decided_by_override || impl_->overridden.contains(key);
    }
    if (setting.empty()) setting = "the default " + std::string(spec.condition->decided_by.front());
    const bool from_recipe = impl_->defaulted.contains(leaf);
    if ((decided_by_override && !impl_->overridden.contains(leaf)) || from_recipe) {
      if (!spec.condition->defaults_pass)  // such keys went unused without a word before: no note
        notes.push_back("dropped " + std::string(from_recipe ? "the recipe's " : "") + leaf +
                        " = " + node_text(value) + ": not used with " + setting +
                        " (it applies to " + spec.applies_text() + ")");
      erase_at(impl_->root, leaf);
      continue;
    }
    // A --set of the key names the --set, not the file (which may not hold the key at all).
    const std::string named = impl_->overridden.contains(leaf) ? "--set " + leaf : leaf;
    throw ConfigError(
        (named == leaf ? impl_->source + ": " : "") + named + " is not used with " + setting +
            " (it applies to " + spec.applies_text() + ")",
        (named == leaf ? "remove " : "drop ") + named + ", or choose a setting that uses it");
  }
  return notes;
}

std::string Config::resolved_toml() const {
  return toml_text(impl_->resolved) + "\n";
}

void Config::fail(std::string_view key, std::string_view constraint, std::string_view got,
                  std::string_view hint) const {
  throw_config_error(source_of(key), key, constraint, got, hint);
}

void throw_config_error(std::string_view source, std::string_view key, std::string_view constraint,
                        std::string_view got, std::string_view hint) {
  std::string message = (source.empty() ? "" : std::string(source) + ": ") + std::string(key) +
                        " must be " + std::string(constraint) + ", got " + plain_number(got);
  std::string h = hint.empty() ? "set " + std::string(key) + " in the config or with --set " +
                                     std::string(key) + "=VALUE"
                               : std::string(hint);
  throw ConfigError(message, h);
}

}  // namespace lbt
