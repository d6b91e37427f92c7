// Configuration: a TOML file plus `--set key=value` overrides, read through typed getters.
// Each getter declares the key it reads (with default and one-line doc), so the resolved
// config, the `--help` key list and "unknown key, did you mean ..." all come from one place.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lbt {

struct ConfigKey {
  std::string key;            // "optimizer.lr"
  std::string default_value;  // TOML text of the default
  std::string doc;
};

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

  // Typed getters: return the configured value or `def`; throw ConfigError on a wrong type.
  double get_double(std::string_view key, double def, std::string_view doc = {});
  std::int64_t get_int(std::string_view key, std::int64_t def, std::string_view doc = {});
  bool get_bool(std::string_view key, bool def, std::string_view doc = {});
  std::string get_string(std::string_view key, std::string_view def, std::string_view doc = {});
  std::vector<std::int64_t> get_int_list(std::string_view key, std::vector<std::int64_t> def,
                                         std::string_view doc = {});
  std::vector<double> get_double_list(std::string_view key, std::vector<double> def,
                                      std::string_view doc = {});
  std::vector<std::string> get_string_list(std::string_view key, std::vector<std::string> def,
                                           std::string_view doc = {});

  bool has(std::string_view key) const;
  // True when a getter has read `key` and its value differs from that getter's default. A
  // run's resolved config.toml sets every key, so "set" alone does not mean "chosen".
  bool differs_from_default(std::string_view key) const;
  const std::string& source() const;

  // Throws ConfigError for the first key in the file or overrides that no getter read,
  // naming the nearest known key. Call after every module has read its section.
  void check_no_unknown_keys() const;

  // The fully resolved config (every key read, with its effective value) as TOML text.
  std::string resolved_toml() const;
  const std::vector<ConfigKey>& known_keys() const;

  // Throws a ConfigError "KEY must be ..., got VALUE" with a hint; for validators.
  [[noreturn]] void fail(std::string_view key, std::string_view constraint,
                         std::string_view got, std::string_view hint = {}) const;

 struct Impl;  // public only so file-local helpers in config.cpp can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// Edit distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace lbt
