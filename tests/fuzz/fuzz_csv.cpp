// libFuzzer target: the CSV reader on arbitrary text, with and without a header.
#include <cstdint>

#include "core/error.hpp"
#include "tests/fuzz/fuzz_file.hpp"
#include "trainer/data/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lbt::fuzz::MemoryFile file(data, size);
  if (!file.ok()) return 0;
  for (const char* header : {"auto", "false"}) {
    try {
      lbt::data::CsvOptions options;
      options.header = header;
      if (std::string(header) == "false")
        options.label_column.assign(1, '0');  // GCC 12 -Wrestrict false positive on = "0"
      lbt::data::load_csv(file.path(), options, "fuzz");
    } catch (const lbt::Error&) {
    }
  }
  return 0;
}
