// The typed config model, declared once: every key lbt reads is a KeySpec (section.key, type,
// default, allowed values, unit, one-line doc, and the setting it depends on). Each part
// declares its keys beside the code that reads them; a Schema joins them. From the schema come
// the validation of a whole config before any work (unknown keys with did-you-mean, wrong types,
// values not allowed, keys the chosen optimizer or decay does not use), every command's --help,
// the defaults the getters return, and the resolved config.toml of a run.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace lbt {

class Config;

// One entry of a kTableList key: its fields in the file's order, each a scalar.
using ConfigValue = std::variant<bool, std::int64_t, double, std::string>;
struct ConfigTable {
  struct Field {
    std::string name;
    ConfigValue value;
  };
  std::vector<Field> fields;
};

// kTableList: an array of tables ([[model.layers]]) whose entries hold scalars only; the config
// checks that shape, the part that reads the key checks each entry's fields
// (Config::get_table_list).
enum class KeyType {
  kBool,
  kInt,
  kNumber,
  kString,
  kIntList,
  kNumberList,
  kStringList,
  kTableList
};

// A key that only some settings use: `variants` names what decides (e.g. the optimizer in
// use), `applies_to` the values for which the key means something. A key whose default
// differs by variant lists those defaults in `defaults` (the first variant with an entry wins).
struct KeyCondition {
  std::vector<std::string_view> decided_by;             // {"optimizer.name", ...}
  std::vector<std::string> (*variants)(const Config&);  // e.g. {"larc", "adamw"}
  std::string_view help_text = {};  // --help's "(only: TEXT = ...)"; empty: decided_by's first
  // A key that holds its default passes where it does not apply: its reader reads it anyway, so
  // every resolved config (and run directory) written before the condition holds it. A file's
  // value dropped because --set changed the setting is dropped without a note (--set
  // noise.enabled=false on a preset measuring the noise printed a note per noise key).
  bool defaults_pass = false;
};

struct KeySpec {
  std::string key;  // "optimizer.beta1"
  KeyType type;
  std::string default_value;                 // TOML text: 0.9, "sgd", [], true
  std::string doc;                           // one line
  std::vector<std::string> allowed = {};     // strings: the valid values (empty: any)
  std::string unit = {};                     // "steps", "examples", or the key that holds the unit
  const KeyCondition* condition = nullptr;   // nullptr: the key always applies
  std::vector<std::string> applies_to = {};  // with a condition: the variants that use the key
  std::vector<std::pair<std::string, std::string>> defaults = {};  // variant -> TOML default

  std::string section() const { return key.substr(0, key.rfind('.')); }
  // The default in effect for `config` (variant defaults first), as TOML text.
  std::string default_for(const Config& config) const;
  // True when the key means something for `config`'s settings.
  bool applies(const Config& config) const;
  // "adam, adamw, lamb" or "" when always.
  std::string applies_text() const;
};

class Schema {
 public:
  Schema() = default;
  Schema& add(const std::vector<KeySpec>& keys);  // throws std::logic_error on a duplicate key
  // The spec of `key` in `keys`; a name missing there is a bug (std::logic_error).
  static const KeySpec& in(const std::vector<KeySpec>& keys, std::string_view key);
  const KeySpec* find(std::string_view key) const;
  const std::vector<const KeySpec*>& keys() const { return keys_; }
  std::vector<std::string> names() const;
  // The tables keys live in ("data" and "data.augment" of data.augment.crop_p), sorted.
  std::vector<std::string> sections() const;
  // A key lbt no longer reads, with what replaced it: validation names it instead of
  // calling it unknown.
  Schema& retire(std::string key, std::string replacement);
  std::string retired(std::string_view key) const;
  // Another tool's name for a key's last part ("learning_rate" for optimizer.lr): an unknown
  // key ending in it is taken for that key in the error's "did you mean".
  Schema& also_known_as(std::string other_name, std::string key);
  // The keys an unknown key most likely meant: those with its last part under another table
  // (train.lr: optimizer.lr), then those that part is another tool's name for; empty where
  // neither (the caller falls back to spelling).
  std::vector<std::string> meant_by(std::string_view unknown_key) const;
  // Throws the ConfigError for a name the schema lacks (a key, or a section when `table`): gone,
  // or unknown with the nearest name; `where` prefixes the message ("FILE: " or "").
  [[noreturn]] void fail_unknown(const std::string& name, bool table,
                                 const std::string& where) const;
  // Every key grouped by section, with its default, unit, allowed values and doc: the part of
  // every command's --help that lists config keys.
  std::string help() const;

 private:
  std::vector<const KeySpec*> keys_;
  std::vector<std::pair<std::string, std::string>> retired_;
  std::vector<std::pair<std::string, std::string>> other_names_;
};

const char* key_type_name(KeyType type);

}  // namespace lbt
