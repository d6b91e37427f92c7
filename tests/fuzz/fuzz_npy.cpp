// libFuzzer target: the NumPy .npy readers on arbitrary bytes (header parsing, dtypes, shapes).
#include <cstdint>

#include "core/error.hpp"
#include "tests/fuzz/fuzz_file.hpp"
#include "trainer/data/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lbt::fuzz::MemoryFile file(data, size);
  if (!file.ok()) return 0;
  try {
    lbt::data::read_npy(file.path());
  } catch (const lbt::Error&) {
  }
  try {  // the features' reader: streamed into float32, each value checked
    lbt::data::read_npy_features(file.path());
  } catch (const lbt::Error&) {
  }
  return 0;
}
