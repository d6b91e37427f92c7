// CIFAR-10 reader; see cifar10.hpp.
#include "trainer/data/cifar10.hpp"

#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.hpp"

namespace lbt::data {

void append_cifar10_file(const std::filesystem::path& path, Dataset& d) {
  require_regular_file(path,
                       "lbt does not download data: get cifar-10-binary.tar.gz from "
                       "https://www.cs.toronto.edu/~kriz/cifar.html, extract it, and set "
                       "data.path to the cifar-10-batches-bin directory");
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path));
  if (size == 0 || size % kCifarRecordBytes != 0) {
    const std::int64_t full = size / kCifarRecordBytes;
    std::string hint = "the file is incomplete or not a CIFAR-10 binary batch: re-extract it";
    if (size > 0 && size % 3074 == 0)
      hint = "3074-byte records are CIFAR-100's format; lbt reads CIFAR-10 (3073-byte records)";
    throw DataError(
        path.string() + ": expected whole 3073-byte records (1 label + 3072 pixel bytes), got " +
            std::to_string(size) + " bytes: " + std::to_string(full) +
            " records and a truncated record of " + std::to_string(size % kCifarRecordBytes) +
            " bytes at offset " + std::to_string(full * kCifarRecordBytes),
        hint);
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    throw DataError("cannot read " + path.string(), "check file permissions");
  }
  const std::int64_t records = size / kCifarRecordBytes, pixels = kCifarRecordBytes - 1;
  d.shape = {3, 32, 32};
  d.dim = pixels;
  d.num_classes = 10;
  d.x.reserve(d.x.size() + static_cast<std::size_t>(records * pixels));
  for (std::int64_t r = 0; r < records; ++r) {
    const unsigned char* rec = bytes.data() + r * kCifarRecordBytes;
    if (rec[0] > 9) {
      throw DataError(path.string() + ": label " + std::to_string(rec[0]) + " of record " +
                          std::to_string(r) + " (byte " + std::to_string(r * kCifarRecordBytes) +
                          ") is not in 0-9",
                      "the file is damaged or not a CIFAR-10 binary batch");
    }
    d.labels.push_back(rec[0]);
    for (std::int64_t i = 1; i <= pixels; ++i) d.x.push_back(rec[i] * (1.0f / 255.0f));
  }
  d.n += records;
}

Dataset load_cifar10(const std::filesystem::path& dir, bool test, const std::string& name) {
  Dataset d;
  d.name = name;
  std::vector<std::filesystem::path> files;
  if (test) {
    files.push_back(dir / "test_batch.bin");
  } else {
    for (int i = 1; i <= 5; ++i)
      files.push_back(dir / ("data_batch_" + std::to_string(i) + ".bin"));
  }
  // Room for every file's pixels at once, untouched: growing per file copied the floats read so
  // far at each of the 5 files (1.2 GB of copies for CIFAR-10's 614 MB).
  std::size_t floats = 0;
  for (const auto& f : files) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(f, ec);
    if (!ec) floats += bytes / kCifarRecordBytes * (kCifarRecordBytes - 1);
  }
  reserve_untouched(d.x, floats);
  for (const auto& f : files) append_cifar10_file(f, d);
  return d;
}

}  // namespace lbt::data
