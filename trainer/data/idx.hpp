// IDX reader (LeCun's MNIST format; Fashion-MNIST uses it too), gzip-compressed or plain.
// Format: magic [0, 0, dtype, ndims], ndims big-endian uint32 sizes, then the data.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace lbt::data {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> bytes;  // ubyte payload
};

// Reads an unsigned-byte IDX file. Throws DataError naming the path, the byte offset and
// expected vs got for a missing file, a wrong magic or a truncated payload.
IdxArray read_idx(const std::filesystem::path& path);

// The dimensions an IDX file's header declares (the payload is not read).
std::vector<std::int64_t> idx_shape(const std::filesystem::path& path);

// Reads an images file ([n, rows, cols]) and a labels file ([n]) into a dataset with pixel
// values scaled to [0, 1]; checks that the counts agree and labels are < num_classes. With
// max_examples > 0 only the first max_examples examples are kept (data.train_limit: the rest
// is read and checked, not converted).
Dataset load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                      std::int64_t num_classes, const std::string& name,
                      std::int64_t max_examples = 0);

}  // namespace lbt::data
