// Reading a JSON file; see json_file.hpp.
#include "experiments/json_file.hpp"

#include "core/error.hpp"
#include "core/io.hpp"

namespace lbt::experiments {

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
  }
  if (!j.is_object()) {
    throw DataError(path.string() + " holds JSON " + j.type_name() + ", not an object", hint);
  }
  return j;
}

}  // namespace lbt::experiments
