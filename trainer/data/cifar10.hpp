// CIFAR-10 binary batches (Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html):
// data_batch_1.bin ... data_batch_5.bin and test_batch.bin, each a sequence of 3073-byte
// records: one label byte (0-9), then 3072 pixel bytes, 1024 per channel R, G, B, each 32x32
// row-major, which is NCHW [3, 32, 32]. lbt never downloads: the user extracts
// cifar-10-binary.tar.gz and points data.path at cifar-10-batches-bin.
#pragma once
#include <filesystem>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace lbt::data {

inline constexpr std::int64_t kCifarRecordBytes = 3073;

// Appends the records of one batch file to `d` (shape [3, 32, 32], pixels scaled to [0, 1]).
// Throws DataError naming the path, the byte offset and expected vs got for a missing file,
// a size that is not a multiple of 3073 (a truncated record or another format, e.g.
// CIFAR-100's 3074-byte records) or a label above 9.
void append_cifar10_file(const std::filesystem::path& path, Dataset& d);

// Reads the five training batches (or the test batch) from `dir`.
Dataset load_cifar10(const std::filesystem::path& dir, bool test, const std::string& name);

}  // namespace lbt::data
