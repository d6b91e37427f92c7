// Config over toml++; see config.hpp.
#include "core/config.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "core/error.hpp"

namespace lbt {

struct Config::Impl {
  toml::table root;       // as given: file + overrides
  toml::table resolved;   // every key read, with its effective value
  std::string source = "<defaults>";
  std::vector<ConfigKey> known;
  std::set<std::string, std::less<>> known_set;
  std::set<std::string, std::less<>> non_default;  // keys read with a value != their default
};

Config::Config() : impl_(std::make_unique<Impl>()) {}
Config::~Config() = default;
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::Config(const Config& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}

namespace {

std::vector<std::string> split_key(std::string_view key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto dot = key.find('.', start);
    parts.emplace_back(key.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

const toml::node* find_node(const toml::table& root, std::string_view key) {
  const toml::table* table = &root;
  auto parts = split_key(key);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const toml::node* node = table->get(parts[i]);
    if (!node) return nullptr;
    if (i + 1 == parts.size()) return node;
    table = node->as_table();
    if (!table) return nullptr;
  }
  return nullptr;
}

// Inserts (or replaces) `value` at dotted `key`, creating intermediate tables.
template <class V>
void insert_at(toml::table& root, std::string_view key, V&& value) {
  toml::table* table = &root;
  auto parts = split_key(key);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* node = table->get(parts[i]);
    if (!node || !node->is_table()) {
      table->insert_or_assign(parts[i], toml::table{});
      node = table->get(parts[i]);
    }
    table = node->as_table();
  }
  table->insert_or_assign(parts.back(), std::forward<V>(value));
}

void collect_leaves(const toml::table& table, const std::string& prefix,
                    std::vector<std::string>& out) {
  for (auto&& [k, v] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) {
      collect_leaves(*sub, key, out);
    } else {
      out.push_back(key);
    }
  }
}

std::string node_text(const toml::node& node) {
  std::ostringstream ss;
  node.visit([&](auto&& v) { ss << v; });
  return ss.str();
}

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

}  // namespace

Config Config::from_string(std::string_view text, std::string source) {
  Config config;
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
  std::ifstream probe(path);
  if (!probe) {
    throw ConfigError("cannot read config file " + path.string(),
                      "check the path; presets live in experiments/configs/");
  }
  std::stringstream ss;
  ss << probe.rdbuf();
  return from_string(ss.str(), path.string());
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
  try {
    toml::table parsed = toml::parse("v = " + value);
    insert_at(impl_->root, key, std::move(*parsed.get("v")));
  } catch (const toml::parse_error&) {
    insert_at(impl_->root, key, value);  // a bare string such as mlp:784-10
  }
}

namespace {

template <class T>
void remember(Config::Impl& impl, std::string_view key, const T& def, std::string_view doc) {
  if (impl.known_set.contains(key)) return;
  impl.known_set.emplace(key);
  std::ostringstream text;
  if constexpr (std::is_same_v<T, std::string>) {
    text << toml::value<std::string>(def);
  } else if constexpr (std::is_same_v<T, bool>) {
    text << (def ? "true" : "false");
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    auto end = std::to_chars(buf, buf + sizeof buf, def).ptr;  // shortest round-trip form
    std::string s(buf, end);
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    text << s;
  } else if constexpr (std::is_arithmetic_v<T>) {
    text << def;
  } else {
    toml::array arr;
    for (const auto& x : def) arr.push_back(x);
    text << arr;
  }
  impl.known.push_back({std::string(key), text.str(), std::string(doc)});
}

}  // namespace

#define LBT_CONFIG_REMEMBER(def) remember(*impl_, key, def, doc)

double Config::get_double(std::string_view key, double def, std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  double value = def;
  if (const toml::node* node = find_node(impl_->root, key)) {
    if (auto d = node->value_exact<double>()) value = *d;
    else if (auto i = node->value_exact<std::int64_t>()) value = static_cast<double>(*i);
    else fail(key, "a number", node_text(*node) + " (" + type_name(*node) + ")");
  }
  insert_at(impl_->resolved, key, value);
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

std::int64_t Config::get_int(std::string_view key, std::int64_t def, std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  std::int64_t value = def;
  if (const toml::node* node = find_node(impl_->root, key)) {
    if (auto i = node->value_exact<std::int64_t>()) value = *i;
    else fail(key, "an integer", node_text(*node) + " (" + type_name(*node) + ")");
  }
  insert_at(impl_->resolved, key, value);
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

bool Config::get_bool(std::string_view key, bool def, std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  bool value = def;
  if (const toml::node* node = find_node(impl_->root, key)) {
    if (auto b = node->value_exact<bool>()) value = *b;
    else fail(key, "true or false", node_text(*node) + " (" + type_name(*node) + ")");
  }
  insert_at(impl_->resolved, key, value);
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

std::string Config::get_string(std::string_view key, std::string_view def, std::string_view doc) {
  LBT_CONFIG_REMEMBER(std::string(def));
  std::string value(def);
  if (const toml::node* node = find_node(impl_->root, key)) {
    if (auto s = node->value_exact<std::string>()) value = *s;
    else fail(key, "a string", node_text(*node) + " (" + type_name(*node) + ")",
              "quote it: " + std::string(key) + " = \"...\"");
  }
  insert_at(impl_->resolved, key, value);
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

namespace {
template <class T>
std::vector<T> read_list(const Config& config, const toml::table& root, std::string_view key,
                         std::vector<T> def, const char* what) {
  const toml::node* node = find_node(root, key);
  if (!node) return def;
  std::vector<T> out;
  const toml::array* arr = node->as_array();
  if (!arr) {
    // a single value is a list of one
    if constexpr (std::is_same_v<T, double>) {
      if (auto i = node->value_exact<std::int64_t>()) return {static_cast<double>(*i)};
    }
    if (auto v = node->value_exact<T>()) return {*v};
    config.fail(key, std::string("an array of ") + what, node_text(*node));
  }
  for (const toml::node& item : *arr) {
    if constexpr (std::is_same_v<T, double>) {
      if (auto i = item.value_exact<std::int64_t>()) {
        out.push_back(static_cast<double>(*i));
        continue;
      }
    }
    auto v = item.value_exact<T>();
    if (!v) config.fail(key, std::string("an array of ") + what, node_text(*node));
    out.push_back(*v);
  }
  return out;
}
template <class T>
toml::array to_array(const std::vector<T>& values) {
  toml::array arr;
  for (const auto& v : values) arr.push_back(v);
  return arr;
}
}  // namespace

std::vector<std::int64_t> Config::get_int_list(std::string_view key,
                                               std::vector<std::int64_t> def,
                                               std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  auto value = read_list<std::int64_t>(*this, impl_->root, key, std::move(def), "integers");
  insert_at(impl_->resolved, key, to_array(value));
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

std::vector<double> Config::get_double_list(std::string_view key, std::vector<double> def,
                                            std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  auto value = read_list<double>(*this, impl_->root, key, std::move(def), "numbers");
  insert_at(impl_->resolved, key, to_array(value));
  if (value != def) impl_->non_default.emplace(key);
  return value;
}

std::vector<std::string> Config::get_string_list(std::string_view key,
                                                 std::vector<std::string> def,
                                                 std::string_view doc) {
  LBT_CONFIG_REMEMBER(def);
  auto value = read_list<std::string>(*this, impl_->root, key, std::move(def), "strings");
  insert_at(impl_->resolved, key, to_array(value));
  if (value != def) impl_->non_default.emplace(key);
  return value;
}
#undef LBT_CONFIG_REMEMBER

bool Config::has(std::string_view key) const { return find_node(impl_->root, key) != nullptr; }
const std::string& Config::source() const { return impl_->source; }
const std::vector<ConfigKey>& Config::known_keys() const { return impl_->known; }

void Config::check_no_unknown_keys() const {
  std::vector<std::string> leaves;
  collect_leaves(impl_->root, "", leaves);
  std::vector<std::string> known;
  for (const auto& k : impl_->known) known.push_back(k.key);
  for (const auto& leaf : leaves) {
    if (impl_->known_set.contains(leaf)) continue;
    std::string hint = "remove it";
    std::string best = nearest(leaf, known);
    if (!best.empty()) hint = "did you mean '" + best + "'? (" + hint + " or fix the name)";
    hint += "; `lbt train --help` lists every key";
    throw ConfigError(impl_->source + ": unknown config key '" + leaf + "'", hint);
  }
}

bool Config::differs_from_default(std::string_view key) const {
  return impl_->non_default.find(key) != impl_->non_default.end();
}

std::string Config::resolved_toml() const {
  std::ostringstream ss;
  ss << impl_->resolved << "\n";
  return ss.str();
}

void Config::fail(std::string_view key, std::string_view constraint, std::string_view got,
                  std::string_view hint) const {
  std::string message = impl_->source + ": " + std::string(key) + " must be " +
                        std::string(constraint) + ", got " + std::string(got);
  std::string h = hint.empty() ? "set " + std::string(key) + " in the config or with --set " +
                                     std::string(key) + "=VALUE"
                               : std::string(hint);
  throw ConfigError(message, h);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  // Only suggest when the match is plausible (at most about a third of the letters differ).
  if (best_distance > std::max<std::size_t>(3, word.size() / 3)) return {};
  return best;
}

}  // namespace lbt
