// NumPy .npy reader (format spec: numpy.lib.format, versions 1.0-3.0): magic "\x93NUMPY",
// version, little-endian header length (2 bytes in v1, 4 in v2/v3), then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (n, ...), } and C-order data.
// Reads float32, float64, uint8 and int64 (little-endian); anything else is a DataError.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/data/dataset.hpp"

namespace lbt::data {

struct NpyLayout {
  std::vector<std::int64_t> shape;
  std::string dtype;  // "float32" | "float64" | "uint8" | "int64"
};
template <class T>
struct NpyArrayOf : NpyLayout {
  std::vector<T> values;  // converted, C order
};
using NpyArray = NpyArrayOf<double>;

NpyArray read_npy(const std::filesystem::path& path);
// Features: each value as the float32 it is trained as, read chunk by chunk into the vector (the
// whole file as bytes and then each value as a double beside it peaked at 4x a float32 file's
// size: 4 GB for a 1 GB file); a value not finite as a float32 is a DataError naming its
// example index (`path`: ... a feature of example index I is V ...).
NpyArrayOf<float> read_npy_features(const std::filesystem::path& path);

// Features [n, ...] and labels into a dataset: integer labels [n] (or [n, 1]) make it
// classification, float32/float64 labels [n] or [n, k] make it regression (targets [n, k]).
// NaN/Inf in features or targets is a DataError naming the example index. The
// per-example shape is the features' trailing dims, or `image_shape` when given (its product
// must equal them). num_classes 0: max label + 1. Features are used as stored (no scaling).
Dataset load_npy_pair(const std::filesystem::path& features, const std::filesystem::path& labels,
                      const std::vector<std::int64_t>& image_shape, std::int64_t num_classes,
                      const std::string& name);

}  // namespace lbt::data
