// Reading and writing values at dotted keys of a toml++ table, and the type checks the config
// makes of them: the TOML side of Config (config.cpp), kept apart from the schema logic.
#pragma once
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_schema.hpp"
#include "core/toml_text.hpp"

namespace lbt::toml_values {

inline std::vector<std::string> split_key(std::string_view key) {
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

inline const toml::node* find_node(const toml::table& root, std::string_view key) {
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

inline void erase_at(toml::table& root, std::string_view key) {
  auto parts = split_key(key);
  toml::table* table = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    table = table->get(parts[i]) ? table->get(parts[i])->as_table() : nullptr;
    if (!table) return;
  }
  table->erase(parts.back());
}

// The dotted keys of `table`'s values, an empty table ([model] with nothing under it) counting
// as a value: a misspelled section must not pass unseen for being empty. `prefix` is the
// table's own key, nullopt at the root: a key named "" ("".optimizer.lr, --set .optimizer.lr)
// read as optimizer.lr, found, and its value was never used (2026-11-30 audit).
inline void collect_leaves(const toml::table& table, const std::optional<std::string>& prefix,
                           std::vector<std::string>& out) {
  for (auto&& [k, v] : table) {
    std::string key = prefix ? *prefix + "." + std::string(k.str()) : std::string(k.str());
    if (const toml::table* sub = v.as_table(); sub && !sub->empty()) {
      collect_leaves(*sub, key, out);
    } else {
      out.push_back(key);
    }
  }
}

// A value as a user would write it: numbers in their shortest form (0.9, not toml++'s
// 0.90000000000000002), strings in double quotes.
inline std::string node_text(const toml::node& node) {
  if (auto d = node.value_exact<double>()) return shortest_text(*d);
  if (auto s = node.value_exact<std::string>()) return "\"" + *s + "\"";
  std::ostringstream ss;
  node.visit([&](auto&& v) { ss << v; });
  return ss.str();
}

inline const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time";
  }
}

template <class T>
toml::array to_array(const std::vector<T>& values) {
  toml::array arr;
  for (const auto& v : values) arr.push_back(v);
  return arr;
}

// A number (an integer is accepted), or nullopt.
inline std::optional<double> as_number(const toml::node& node) {
  if (auto d = node.value_exact<double>()) return *d;
  if (auto i = node.value_exact<std::int64_t>()) return static_cast<double>(*i);
  return std::nullopt;
}

// std::to_string's fixed six decimals, as validators pass a double: "0.000000" -> "0",
// "-0.100000" -> "-0.1"; any other text is left as it is.
inline std::string plain_number(std::string_view got) {
  const auto dot = got.find('.');
  const bool decimal = dot != std::string_view::npos && got.size() - dot == 7 &&
                       got.find_first_not_of("-0123456789.") == std::string_view::npos &&
                       got.find('.', dot + 1) == std::string_view::npos;
  if (!decimal) return std::string(got);
  std::string out(got);
  out.erase(out.find_last_not_of('0') + 1);
  if (out.back() == '.') out.pop_back();
  return out == "-0" ? "0" : out;
}

template <class T>
std::optional<T> as_item(const toml::node& node) {
  if constexpr (std::is_same_v<T, double>)
    return as_number(node);
  else if (auto v = node.value_exact<T>())
    return *v;
  return std::nullopt;
}

// A list of T; a single value is a list of one.
template <class T>
std::optional<std::vector<T>> as_list(const toml::node& node) {
  const toml::array* arr = node.as_array();
  if (!arr) {
    if (auto v = as_item<T>(node)) return std::vector<T>{*v};
    return std::nullopt;
  }
  std::vector<T> out;
  for (const toml::node& item : *arr) {
    auto v = as_item<T>(item);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

// An array of tables whose values are scalars, as ConfigTables (fields in the file's order), or
// nullopt.
inline std::optional<std::vector<ConfigTable>> as_table_list(const toml::node& node) {
  const toml::array* arr = node.as_array();
  if (!arr) return std::nullopt;
  std::vector<ConfigTable> out;
  for (const toml::node& item : *arr) {
    const toml::table* table = item.as_table();
    if (!table) return std::nullopt;
    ConfigTable entry;
    for (auto&& [k, v] : *table) {
      ConfigValue value;
      if (auto b = v.value_exact<bool>())
        value = *b;
      else if (auto i = v.value_exact<std::int64_t>())
        value = *i;
      else if (auto d = v.value_exact<double>())
        value = *d;
      else if (auto s = v.value_exact<std::string>())
        value = *s;
      else
        return std::nullopt;
      entry.fields.push_back({std::string(k.str()), std::move(value)});
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// True when `node` holds a value of `type` (the check validate() makes before any getter).
inline bool has_type(const toml::node& node, KeyType type) {
  switch (type) {
    case KeyType::kBool:
      return node.value_exact<bool>().has_value();
    case KeyType::kInt:
      return node.value_exact<std::int64_t>().has_value();
    case KeyType::kNumber:
      return as_number(node).has_value();
    case KeyType::kString:
      return node.value_exact<std::string>().has_value();
    case KeyType::kIntList:
      return as_list<std::int64_t>(node).has_value();
    case KeyType::kNumberList:
      return as_list<double>(node).has_value();
    case KeyType::kStringList:
      return as_list<std::string>(node).has_value();
    case KeyType::kTableList:
      return as_table_list(node).has_value();
  }
  return false;
}

}  // namespace lbt::toml_values
