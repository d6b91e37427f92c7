// A whole JSON file lbt wrote (sweep.json, summary.json) read back: a file cut short or edited
// into something that does not parse is a DataError naming it, the byte and the fix, not a bare
// parser message without the file.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace lbt::experiments {

// Parses `path`; DataError "PATH does not parse as JSON at byte N (...)" with `hint` where it
// does not, or where it is not a JSON object.
nlohmann::json read_json_object(const std::filesystem::path& path, const std::string& hint);

// A measurement as summary.json writes it: null where it was not measured (NaN), never NaN.
inline nlohmann::json null_if_nan(double v) {
  return v != v ? nlohmann::json() : nlohmann::json(v);
}

// [low, high], or null where the interval was not measured (NaN ends).
inline nlohmann::json interval_or_null(double low, double high) {
  return low != low || high != high ? nlohmann::json() : nlohmann::json::array({low, high});
}

}  // namespace lbt::experiments
