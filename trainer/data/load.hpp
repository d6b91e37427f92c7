// Loads the configured dataset and splits it into train and validation (and test when the
// dataset has one), normalised with training-split statistics.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/config/train_config.hpp"
#include "trainer/data/dataset.hpp"

namespace lbt::data {

struct Splits {
  Dataset train, validation, test;
  Normalization normalization;
};

Splits load_splits(const trainer::DataConfig& config, std::uint64_t seed);

// One file load_splits reads, with the config key that names it (or its directory).
struct DataFile {
  std::string key;  // "data.path", "data.train_features", ...
  std::filesystem::path path;
};

// The files load_splits reads for `config`, in a fixed order (none for synthetic data), so
// ranks can compare what they will train on before loading it. Throws DataError as
// load_splits does for an IDX file that is missing.
std::vector<DataFile> data_files(const trainer::DataConfig& config);

}  // namespace lbt::data
