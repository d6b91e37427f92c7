// experiments/rank_agreement's data prints: the whole-file CRC-32 beside the sampled part, each
// checked against zlib's CRC of the bytes written here, and the cache that spares a run start
// reading every byte again: used while the file is the same, never once it changed, even where
// its size and modification time were put back, and not for a file changed under 3 s ago.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/file_cache.hpp"
#include "experiments/rank_agreement.hpp"
#include "support/process_scratch.hpp"

namespace fs = std::filesystem;
using lbt::experiments::data_fingerprints;

namespace {

const lbt::test::ProcessScratch scratch("lbt_test_data_prints");

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The print's CRC part, as zlib computes it over `bytes` here.
std::string crc_of(const std::string& bytes) {
  const uLong crc =
      crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  char text[16];
  std::snprintf(text, sizeof text, ":%08lx", crc);
  return text;
}

// The file's one print line: "k SIZE SAMPLED:CRC".
std::string print_of(const fs::path& path) {
  return data_fingerprints({{"k", path}}).at(0);
}

void set_modified(const fs::path& path, const timespec& when) {
  const timespec times[2] = {when, when};
  BOOST_REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_files_print_is_cached_until_the_file_changes_whatever_its_times_say) {
  const fs::path cache = scratch.path() / "cache", data = scratch.path() / "x.npy";
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  std::mt19937 bits(3);
  std::string bytes(5 << 19, '\0');  // 2.5 MiB: the sampled MiBs leave the middle out
  for (char& c : bytes) c = static_cast<char>(bits());
  write_bytes(data, bytes);
  struct stat first {};
  BOOST_REQUIRE(::stat(data.c_str(), &first) == 0);
  const auto stored = [&] {
    std::vector<fs::path> files;
    if (fs::exists(cache / "lbt"))
      for (const auto& entry : fs::directory_iterator(cache / "lbt"))
        if (entry.path().filename().string().starts_with("data-print-")) files.push_back(entry);
    return files;
  };

  const std::string print = print_of(data);
  BOOST_TEST(print.ends_with(crc_of(bytes)), print);
  BOOST_TEST(print.starts_with("k " + std::to_string(bytes.size()) + " "));
  // Changed under 3 s ago: not stored (a change within a file system's time resolution keeps
  // the times). Then stored, and a second run start reads it from the cache, as a value planted
  // there shows.
  BOOST_TEST(stored().empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  BOOST_TEST(print_of(data) == print);
  BOOST_REQUIRE(stored().size() == 1u);
  std::string text = read_bytes(stored().at(0));
  const std::string crc = crc_of(bytes).substr(1);
  text.replace(text.rfind(crc), crc.size(), "0badc0de");
  write_bytes(stored().at(0), text);
  BOOST_TEST(print_of(data).ends_with(":0badc0de"));

  // One bit flipped mid-file, the size and the modification time put back: read again.
  std::string edited = bytes;
  edited[edited.size() / 2] ^= 0x01;
  write_bytes(data, edited);
  set_modified(data, first.st_mtim);
  BOOST_TEST(print_of(data).ends_with(crc_of(edited)));
  write_bytes(data, bytes);
  set_modified(data, first.st_mtim);
  BOOST_TEST(print_of(data) == print);
  unsetenv("XDG_CACHE_HOME");
}
