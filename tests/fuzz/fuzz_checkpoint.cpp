// libFuzzer target: the checkpoint reader on arbitrary bytes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "support/process_scratch.hpp"
#include "trainer/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const lbt::test::ProcessScratch scratch(lbt::test::per_process("lbt_fuzz_ckpt"));
  static const std::string path = (scratch.path() / "checkpoint").string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    lbt::trainer::read_checkpoint(path);
  } catch (const lbt::Error&) {
  }
  return 0;
}
