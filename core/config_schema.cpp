// The config schema: key specs, conditions and --help text; see config_schema.hpp.
#include "core/config_schema.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/nearest.hpp"

namespace lbt {

const char* key_type_name(KeyType type) {
  switch (type) {
    case KeyType::kBool:
      return "true or false";
    case KeyType::kInt:
      return "an integer";
    case KeyType::kNumber:
      return "a number";
    case KeyType::kString:
      return "a string";
    case KeyType::kIntList:
      return "an array of integers";
    case KeyType::kNumberList:
      return "an array of numbers";
    case KeyType::kStringList:
      return "an array of strings";
    case KeyType::kTableList:
      return "an array of tables ([[section.key]]) of numbers, strings and booleans";
  }
  return "?";
}

std::string KeySpec::default_for(const Config& config) const {
  if (condition && !defaults.empty()) {
    for (const auto& variant : condition->variants(config)) {
      for (const auto& [name, value] : defaults) {
        if (name == variant) return value;
      }
    }
  }
  return default_value;
}

bool KeySpec::applies(const Config& config) const {
  if (!condition || applies_to.empty()) return true;
  for (const auto& variant : condition->variants(config)) {
    if (std::find(applies_to.begin(), applies_to.end(), variant) != applies_to.end()) return true;
  }
  return false;
}

std::string KeySpec::applies_text() const {
  std::string out;
  if (!condition || applies_to.empty()) return out;
  // A variant that is a comparison reads as one: "schedule.warmup > 0", not "= > 0".
  const bool comparison = applies_to.front().starts_with('>');
  out = std::string(condition->help_text.empty() ? condition->decided_by.front()
                                                 : condition->help_text) +
        (comparison ? " " : " = ");
  for (std::size_t i = 0; i < applies_to.size(); ++i) out += (i ? " | " : "") + applies_to[i];
  return out;
}

Schema& Schema::add(const std::vector<KeySpec>& keys) {
  for (const KeySpec& spec : keys) {
    if (find(spec.key)) throw std::logic_error("lbt bug: config key declared twice: " + spec.key);
    keys_.push_back(&spec);
  }
  return *this;
}

const KeySpec& Schema::in(const std::vector<KeySpec>& keys, std::string_view key) {
  for (const KeySpec& spec : keys) {
    if (spec.key == key) return spec;
  }
  throw std::logic_error("lbt bug: config key " + std::string(key) + " is read but not declared");
}

const KeySpec* Schema::find(std::string_view key) const {
  for (const KeySpec* spec : keys_) {
    if (spec->key == key) return spec;
  }
  return nullptr;
}

std::vector<std::string> Schema::names() const {
  std::vector<std::string> out;
  for (const KeySpec* spec : keys_) out.push_back(spec->key);
  return out;
}

std::vector<std::string> Schema::sections() const {
  std::set<std::string> out;
  for (const KeySpec* spec : keys_) {
    for (std::size_t dot = spec->key.find('.'); dot != std::string::npos;
         dot = spec->key.find('.', dot + 1))
      out.insert(spec->key.substr(0, dot));
  }
  return {out.begin(), out.end()};
}

Schema& Schema::retire(std::string key, std::string replacement) {
  retired_.emplace_back(std::move(key), std::move(replacement));
  return *this;
}

std::string Schema::retired(std::string_view key) const {
  for (const auto& [old_key, replacement] : retired_) {
    if (old_key == key) return replacement;
  }
  return {};
}

Schema& Schema::also_known_as(std::string other_name, std::string key) {
  other_names_.emplace_back(std::move(other_name), std::move(key));
  return *this;
}

std::vector<std::string> Schema::meant_by(std::string_view unknown_key) const {
  const auto last_part = [](std::string_view key) { return key.substr(key.rfind('.') + 1); };
  const std::string_view part = last_part(unknown_key);
  std::vector<std::string> out;
  for (const KeySpec* spec : keys_)
    if (last_part(spec->key) == part) out.push_back(spec->key);
  for (const auto& [other_name, key] : other_names_)
    if (other_name == part && std::find(out.begin(), out.end(), key) == out.end())
      out.push_back(key);
  return out;
}

void Schema::fail_unknown(const std::string& name, bool table, const std::string& where) const {
  if (std::string why = retired(name); !why.empty())
    throw ConfigError(where + "config key '" + name + "' is gone", why);
  std::string hint = "remove it";
  std::string best = nearest(name, table ? sections() : names());
  if (const auto meant = meant_by(name); !table && !meant.empty()) {
    best = meant.front();  // train.lr: optimizer.lr, not the nearer-spelt train.lars...
    for (std::size_t i = 1; i < meant.size(); ++i) best += "' or '" + meant[i];
  }
  if (!best.empty()) hint = "did you mean '" + best + "'? (" + hint + " or fix the name)";
  hint += "; `lbt train --help` lists every key";
  throw ConfigError(where + "unknown config " + (table ? "section '" : "key '") + name + "'", hint);
}

namespace {

// "eps = 1e-08 (lamb: 1e-06)": the default, and where it differs by variant.
std::string default_text(const KeySpec& spec) {
  std::string text = spec.key.substr(spec.key.rfind('.') + 1) + " = " + spec.default_value;
  for (const auto& [variant, value] : spec.defaults) {
    if (value != spec.default_value) text += " (" + variant + ": " + value + ")";
  }
  return text;
}

}  // namespace

std::string Schema::help() const {
  std::vector<std::string> sections;
  for (const KeySpec* spec : keys_) {
    if (std::find(sections.begin(), sections.end(), spec->section()) == sections.end()) {
      sections.push_back(spec->section());
    }
  }
  std::ostringstream ss;
  ss << "Config keys, by TOML section (or --set section.key=value), with their defaults.\n"
        "'only:' names the setting a key belongs to; keys of another setting are an error.\n";
  for (const auto& section : sections) {
    ss << "\n[" << section << "]\n";
    for (const KeySpec* spec : keys_) {
      if (spec->section() != section) continue;
      std::string left = default_text(*spec);
      std::string doc = spec->doc;
      if (!spec->allowed.empty()) {
        std::string list;
        for (const auto& a : spec->allowed) list += (list.empty() ? "" : " | ") + a;
        doc = list + ": " + doc;
      }
      if (!spec->unit.empty()) doc += " [" + spec->unit + "]";
      if (!spec->applies_to.empty()) doc += " (only: " + spec->applies_text() + ")";
      constexpr std::size_t kWidth = 34;
      ss << "  " << left;
      if (left.size() < kWidth) {
        ss << std::string(kWidth - left.size(), ' ');
      } else {
        ss << "\n  " << std::string(kWidth, ' ');
      }
      ss << "  " << doc << "\n";
    }
  }
  return ss.str();
}

}  // namespace lbt
