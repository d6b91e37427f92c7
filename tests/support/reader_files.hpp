// Small data files for the reader tests (test_readers.cpp, test_npy.cpp): a scratch directory,
// .npy bytes with a header written by hand, and the DataError a call throws.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace lbt::test {

namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("lbt_readers_" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& bytes) {
    fs::path p = path / name;
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
};

template <class F>
std::string data_error_of(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what() + std::string(" | hint: ") + e.hint();
  }
  return "<no DataError>";
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A .npy file: version 1 (2-byte header length) or 2 (4-byte), header padded to 64 bytes.
inline std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                       int version = 1, const std::string& order = "False") {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  const std::size_t pre = version == 1 ? 10 : 12;
  while ((pre + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const std::uint32_t len = static_cast<std::uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (version != 1)
    out += static_cast<char>((len >> 16) & 0xff), out += static_cast<char>(len >> 24);
  return out + dict + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

}  // namespace lbt::test
