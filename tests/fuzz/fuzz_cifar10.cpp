// libFuzzer target: the CIFAR-10 binary-batch reader on arbitrary bytes.
#include <cstdint>

#include "core/error.hpp"
#include "tests/fuzz/fuzz_file.hpp"
#include "trainer/data/cifar10.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lbt::fuzz::MemoryFile file(data, size);
  if (!file.ok()) return 0;
  try {
    lbt::data::Dataset d;
    lbt::data::append_cifar10_file(file.path(), d);
  } catch (const lbt::Error&) {
  }
  return 0;
}
