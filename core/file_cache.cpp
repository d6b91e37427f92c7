// file_cache: see file_cache.hpp.
#include "core/file_cache.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

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
  if (file.empty()) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first) || first != one_line(key)) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool store(std::string_view kind, const std::string& key, const std::string& value) {
  const std::filesystem::path file = file_for(kind, key);
  if (file.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  try {
    io::atomic_write(file, one_line(key) + "\n" + value);
  } catch (const std::exception&) {  // unwritable: the next process finds it again
    return false;
  }
  return true;
}

}  // namespace lbt::file_cache
