// Configuration: a TOML file plus `--set key=value` overrides, checked against the Schema
// (core/config_schema.hpp) before any work and read through typed getters that take a key's
// KeySpec, so a key's type, default and doc are written once, in its part's key table.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_schema.hpp"

namespace lbt {

class Config {
 public:
  Config();
  ~Config();
  Config(Config&&) noexcept;
  Config& operator=(Config&&) noexcept;
  Config(const Config&);

  static Config from_file(const std::filesystem::path& path);
  static Config from_string(std::string_view text, std::string source = "<string>");

  // Applies "section.key=value"; value is parsed as TOML (so 0.1, true, [1,2], "s"), and taken
  // as a plain string when it does not parse (so model.spec=mlp:784-10 needs no quotes).
  void set(std::string_view assignment);
  // Sets `assignment` only where the key is not set (a named recipe's values). Such a key that
  // the settings do not use is dropped by validate() with a note, not an error.
  void set_default(std::string_view assignment);

  // Checks the whole config against `schema` before anything reads it: every key known (else
  // "did you mean"), of its type, one of its allowed values, and used by the chosen settings.
  // A key the settings do not use is an error naming both keys, except where the deciding
  // key was changed by --set (say --set optimizer.name=adam on a momentum preset): then the
  // file's keys that no longer apply are dropped, and the returned notes say which.
  std::vector<std::string> validate(const Schema& schema);

  // Typed getters: the configured value, else the key's default (from its spec, or `derived`
  // for keys whose default is computed, such as schedule.reference_batch). The value read is
  // recorded in the resolved config. A getter of the wrong type for the spec is a bug
  // (std::logic_error); a value of the wrong type in the config is a ConfigError.
  double get_double(const KeySpec& spec, std::optional<double> derived = {});
  std::int64_t get_int(const KeySpec& spec, std::optional<std::int64_t> derived = {});
  bool get_bool(const KeySpec& spec);
  std::string get_string(const KeySpec& spec);
  std::vector<std::int64_t> get_int_list(const KeySpec& spec);
  std::vector<double> get_double_list(const KeySpec& spec);
  std::vector<std::string> get_string_list(const KeySpec& spec);
  // A kTableList key's entries; the array goes into the resolved config as written, so a
  // resumed run compares it like any other key. Checking each entry's fields is the caller's.
  std::vector<ConfigTable> get_table_list(const KeySpec& spec);

  // Removes `key` (a value, or a table such as "sweep") from the config and the resolved config:
  // a sweep's trial configs are its config without [sweep], as each trial reads them.
  void erase(std::string_view key);

  bool has(std::string_view key) const;
  // The configured string at `key`, or `fallback`; reads nothing into the resolved config (for
  // the conditions that decide which keys apply).
  std::string peek_string(std::string_view key, std::string_view fallback) const;
  // The configured integer at `key`; nullopt where none is set or it is not an integer.
  std::optional<std::int64_t> peek_int(std::string_view key) const;
  // The configured number (integer or float) at `key`; nullopt where none is set or not a number.
  std::optional<double> peek_number(std::string_view key) const;
  // The configured boolean at `key`, or `fallback` (likewise read into nothing).
  bool peek_bool(std::string_view key, bool fallback) const;
  const std::string& source() const;

  // The fully resolved config (every key read, with its effective value) as TOML text.
  std::string resolved_toml() const;

  // Throws a ConfigError "SOURCE: KEY must be ..., got VALUE" with a hint; for validators.
  // SOURCE is the file; none where the command line set the key (its message names the option).
  [[noreturn]] void fail(std::string_view key, std::string_view constraint, std::string_view got,
                         std::string_view hint = {}) const;

  // The file `key`'s value came from, for an error message; "" where the command line set it.
  std::string source_of(std::string_view key) const;

  struct Impl;  // public only so file-local helpers in config.cpp can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// Throws ConfigError "SOURCE: KEY must be CONSTRAINT, got GOT" with `hint` (or one saying how
// to set the key): the one form of a bad-value error, for parts that hold typed options.
[[noreturn]] void throw_config_error(std::string_view source, std::string_view key,
                                     std::string_view constraint, std::string_view got,
                                     std::string_view hint = {});

}  // namespace lbt
