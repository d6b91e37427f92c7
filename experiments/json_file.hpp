// A whole JSON file lbt wrote (sweep.json, summary.json) read back: a file cut short or edited
// into something that does not parse is a DataError naming it, the byte and the fix, not a bare
// parser message without the file.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace lbt::experiments {

// nlohmann's message without its tag ("[json.exception.parse_error.101] "): what a message
// naming the file quotes.
std::string json_error_text(const nlohmann::json::exception& e);

// Parses `path`; DataError "PATH does not parse as JSON at byte N (...)" with `hint` where it
// does not, or where it is not a JSON object.
nlohmann::json read_json_object(const std::filesystem::path& path, const std::string& hint);

// The text of a JSON file a field of which holds another program's output (a failed trial's last
// log lines): bytes that are not UTF-8, which JSON cannot hold, become U+FFFD where dump() would
// throw and lose the verdict with them.
std::string json_text_of_output(const nlohmann::json& j);

// Whether `text` is UTF-8, as a path must be that lbt records in a JSON file (cbs.json's
// reference, plan.json's directory) and reads back.
bool is_utf8(const std::string& text);

// ConfigError naming `option` and `dir` where its absolute path is not UTF-8.
void require_utf8_path(const std::filesystem::path& dir, const std::string& option);

// A measurement as summary.json writes it: null where it was not measured (NaN), never NaN.
inline nlohmann::json null_if_nan(double v) {
  return v != v ? nlohmann::json() : nlohmann::json(v);
}

// [low, high], or null where the interval was not measured (NaN ends).
inline nlohmann::json interval_or_null(double low, double high) {
  return low != low || high != high ? nlohmann::json() : nlohmann::json::array({low, high});
}

}  // namespace lbt::experiments
