// file_cache: see file_cache.hpp.
#include "core/file_cache.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "core/io.hpp"

namespace lbt::file_cache {
namespace {

// A key is one line in its file: line breaks inside it become spaces (in the hash as well).
std::string one_line(std::string key) {
  for (char& c : key)
    if (c == '\n' || c == '\r') c = ' ';
  return key;
}

// FNV-1a, 64-bit: the same name for a key in every build (std::hash promises no such thing).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// KIND-<16 hex digits>.txt, or such a file's temporary twin (io::temporary_twin's
// NAME.tmp.HOST.PID.RANDOM, left behind by a process killed while writing): the names store() may
// prune.
bool is_kind_file(const std::string& name, std::string_view kind) {
  const std::size_t hex_at = kind.size() + 1;
  if (name.size() < hex_at + 20 || name.compare(0, kind.size(), kind) != 0 ||
      name[kind.size()] != '-')
    return false;
  for (std::size_t i = hex_at; i < hex_at + 16; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  const std::string_view rest = std::string_view(name).substr(hex_at + 16);
  return rest == ".txt" || rest.rfind(".txt.tmp.", 0) == 0;
}

// Removes the kind's files in `dir` past the `keep` most recently modified. Processes pruning
// at once may remove a file another just stored: that costs a miss, nothing more.
void prune(const std::filesystem::path& dir, std::string_view kind, std::size_t keep) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code time_ec;
    const auto modified = it->last_write_time(time_ec);
    if (!time_ec && is_kind_file(it->path().filename().string(), kind))
      files.emplace_back(modified, it->path());
  }
  if (files.size() <= keep) return;
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = keep; i < files.size(); ++i) std::filesystem::remove(files[i].second, ec);
}

}  // namespace

std::filesystem::path directory() {
  // A relative path is ignored, as the XDG Base Directory specification says: it would put the
  // cache wherever lbt happened to start.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::filesystem::path(xdg) / "lbt";
  if (const char* home = std::getenv("HOME"); home && *home == '/')
    return std::filesystem::path(home) / ".cache" / "lbt";
  return {};
}

std::filesystem::path file_for(std::string_view kind, const std::string& key) {
  const std::filesystem::path dir = directory();
  if (dir.empty()) return {};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(one_line(key))));
  return dir / (std::string(kind) + "-" + hex + ".txt");
}

std::optional<std::string> find(std::string_view kind, const std::string& key) {
  const std::filesystem::path file = file_for(kind, key);
  std::error_code ec;
  if (file.empty() || !std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first) || first != one_line(key)) return std::nullopt;
  std::string value(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>{});
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now(), ec);
  return value;
}

bool store(std::string_view kind, const std::string& key, const std::string& value,
           std::size_t keep_files) {
  const std::filesystem::path file = file_for(kind, key);
  if (file.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  try {
    io::atomic_write(file, one_line(key) + "\n" + value);
  } catch (const std::exception&) {  // unwritable: the next process finds it again
    return false;
  }
  prune(file.parent_path(), kind, keep_files);
  return true;
}

}  // namespace lbt::file_cache
