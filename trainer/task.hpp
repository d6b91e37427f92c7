// The task a dataset poses (classification or regression) against what the config asks of it:
// model.loss, train.target's metric and the model's output width. Checked once the data is
// loaded and before any training step, so a mismatch is a one-line ConfigError with its fix.
#pragma once
#include <cstdint>

#include "trainer/config/train_config.hpp"
#include "trainer/data/dataset.hpp"

namespace lbt::trainer {

// Throws ConfigError when model.loss or train.target does not fit `train` (cross_entropy or
// val_accuracy on float targets; mse, val_mse or val_r2 on integer labels), or when
// `model_outputs` (>= 0) differs from the classes / target width.
void check_task(const TrainConfig& config, const data::Dataset& train,
                std::int64_t model_outputs = -1);

}  // namespace lbt::trainer
