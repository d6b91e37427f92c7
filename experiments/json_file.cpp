// Reading a JSON file; see json_file.hpp.
#include "experiments/json_file.hpp"

#include "core/error.hpp"
#include "core/io.hpp"

namespace lbt::experiments {

std::string json_error_text(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto end = what.find("] ");
  return what.starts_with("[json.exception.") && end != std::string::npos ? what.substr(end + 2)
                                                                          : what;
}

nlohmann::json read_json_object(const std::filesystem::path& path, const std::string& hint) {
  const std::string text = io::read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts a read past the end as byte size + 1: the file ends before its JSON does.
    const std::string where = e.byte > text.size()
                                  ? "ends (" + std::to_string(text.size()) + " bytes) mid-JSON"
                                  : "does not parse as JSON at byte " + std::to_string(e.byte);
    throw DataError(path.string() + " " + where + ": the file was cut short or edited", hint);
  } catch (const nlohmann::json::exception& e) {  // 1e400: a number past a double
    throw DataError(path.string() + " does not parse as JSON (" + json_error_text(e) +
                        "): the file was cut short or edited",
                    hint);
  }
  if (!j.is_object()) {
    throw DataError(path.string() + " holds JSON " + j.type_name() + ", not an object", hint);
  }
  return j;
}

std::string json_text_of_output(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

bool is_utf8(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();  // the library's own check of what it can write
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

void require_utf8_path(const std::filesystem::path& dir, const std::string& option) {
  const std::string absolute = std::filesystem::absolute(dir).string();
  if (is_utf8(absolute)) return;
  throw ConfigError(option + " " + dir.string() + ": its path (" + absolute +
                        ") is not UTF-8, and lbt records it in JSON, which holds UTF-8 only",
                    "rename the directory, or link it under a UTF-8 name and pass that");
}

}  // namespace lbt::experiments
