// The resolved config a checkpoint holds against the run's; see run_checkpoint.hpp.
#include "experiments/run_checkpoint.hpp"

#include <map>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/toml_text.hpp"

namespace lbt::experiments {
namespace {

// Brackets and braces opened minus closed in a line of TOML, outside its strings.
int nesting_change(const std::string& line) {
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;  // an escape in a basic string
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      break;
    } else {
      depth += (c == '[' || c == '{') - (c == ']' || c == '}');
    }
  }
  return depth;
}

}  // namespace

// "section.key" -> value text, from toml++'s printed form ([section] headers, key = value). A
// value toml++ spreads over lines (an array past ~120 characters) is one value, its lines
// joined: read line by line it was "[", and a change inside it compared equal.
std::map<std::string, std::string> flatten_config(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(shortest_floats(text));  // an older lbt printed 0.050000000000000003
  std::string line, section;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(' '));  // toml++ indents arrays of tables
    if (line.empty()) continue;
    // [[model.layers]]: entry i's keys are model.layers[i].KEY, and the entry count is a key
    // of its own, so a list that grew or shrank differs too.
    if (line.rfind("[[", 0) == 0) {
      const std::string array = line.substr(2, line.find("]]") - 2);
      std::string& count = out[array + ".length"];
      const int index = count.empty() ? 0 : std::stoi(count);
      count = std::to_string(index + 1);
      section = array + "[" + std::to_string(index) + "]";
      continue;
    }
    if (line.front() == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 3), more;
    for (int depth = nesting_change(value); depth > 0 && std::getline(in, more);) {
      more.erase(0, more.find_first_not_of(' '));
      value += " " + more;
      depth += nesting_change(more);
    }
    out[section.empty() ? line.substr(0, eq) : section + "." + line.substr(0, eq)] = value;
  }
  return out;
}

// Not train.threads: the thread count changes how GEMMs split their sums, so a resume with
// other threads would not continue bit for bit.
bool key_may_change_on_resume(const std::string& key) {
  return key == "train.log_every" || key.rfind("train.checkpoint_", 0) == 0 ||
         names_a_data_file(key);
}

bool names_a_data_file(const std::string& key) {
  for (const char* k : {"data.path", "data.train_features", "data.train_labels",
                        "data.test_features", "data.test_labels"})
    if (key == k) return true;
  return false;
}

std::string config_differences(const std::string& saved_toml, const std::string& resolved_toml) {
  const auto saved = flatten_config(saved_toml);
  const auto now = flatten_config(resolved_toml);
  std::string differs;
  for (const auto& [key, value] : now) {
    auto it = saved.find(key);
    const std::string before = it == saved.end() ? "(unset)" : it->second;
    if (before != value && !key_may_change_on_resume(key)) {
      differs += (differs.empty() ? "" : ", ") + key + ": " + before + " -> " + value;
    }
  }
  return differs;
}

void refuse_changed_config(const std::filesystem::path& run_dir, const std::string& saved_toml,
                           const std::string& resolved_toml) {
  const std::string differs = config_differences(saved_toml, resolved_toml);
  if (!differs.empty()) {
    throw ConfigError(
        "cannot resume " + run_dir.string() + ": the config changed (" + differs + ")",
        "resume with the run's own config (its config.toml, as the checkpoint recorded it: "
        "restore the file if it was edited or cut short); only train.log_every, "
        "train.checkpoint_* and the data files' paths (their contents checked) may change");
  }
}

}  // namespace lbt::experiments
