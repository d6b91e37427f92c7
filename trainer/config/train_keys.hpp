// The model.*, data.*, train.* and comm.* config keys (declared once), read by
// read_train_config (train_config.hpp).
#pragma once
#include <string_view>
#include <vector>

#include "core/config_schema.hpp"

namespace lbt::trainer {

const std::vector<KeySpec>& train_keys();

// The declaration of one of them (Schema::in: throws for a name not declared).
const KeySpec& train_key(std::string_view name);

// The data format a config selects: data.format, else the one data.dataset implies (idx for
// fashion-mnist and mnist, cifar10, synthetic for synthetic-regression; "" when unknown).
std::string data_format_of(const Config& config);

}  // namespace lbt::trainer
