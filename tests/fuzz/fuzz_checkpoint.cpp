// libFuzzer target: the checkpoint reader on arbitrary bytes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.hpp"
#include "trainer/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("lbt_fuzz_ckpt_" + std::to_string(::getpid()))).string();
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
