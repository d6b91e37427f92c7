// data.*: the dataset, its files or generated problem, and the validation split, read from the
// config into DataConfig (split from train_config.cpp, which passed 400 lines).
#pragma once

#include "core/config.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::trainer {

// Reads and checks every data.* key that applies; ConfigError naming the key otherwise.
void read_data_config(Config& c, DataConfig& d);

}  // namespace lbt::trainer
