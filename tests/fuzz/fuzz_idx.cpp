// libFuzzer target: the IDX reader on arbitrary bytes (plain and, via gzread, gzip streams).
// Any outcome but success or lbt::Error (a crash, a sanitizer report, another exception
// type, a hang) is a bug.
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "trainer/data/idx.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Cap the header-declared payload the reader will allocate: the reader itself refuses more
  // than 16 GiB, but the fuzzer's RSS limit is far lower.
  if (size >= 8 && data[3] >= 1) {
    std::uint64_t total = 1;
    for (int d = 0; d < data[3] && 4 + 4 * d + 4 <= static_cast<int>(size); ++d) {
      const std::uint8_t* p = data + 4 + 4 * d;
      total *= (std::uint64_t(p[0]) << 24) | (std::uint64_t(p[1]) << 16) | (std::uint64_t(p[2]) << 8) | p[3];
      if (total > (64u << 20)) return 0;
    }
  }
  lbt::fuzz::MemoryFile file(data, size);
  if (!file.ok()) return 0;
  try {
    lbt::data::read_idx(file.path());
  } catch (const lbt::Error&) {
  }
  return 0;
}
