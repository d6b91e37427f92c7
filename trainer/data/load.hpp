// Loads the configured dataset and splits it into train and validation (and test when the
// dataset has one), normalised with training-split statistics.
#include <cstdint>
#pragma once

#include "trainer/data/dataset.hpp"
#include "trainer/train_config.hpp"

namespace lbt::data {

struct Splits {
  Dataset train, validation, test;
  Normalization normalization;
};

Splits load_splits(const trainer::DataConfig& config, std::uint64_t seed);

}  // namespace lbt::data
