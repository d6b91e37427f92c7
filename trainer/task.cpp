// check_task; see task.hpp.
#include "trainer/task.hpp"

#include <string>

#include "core/error.hpp"

namespace lbt::trainer {
namespace {

// The dataset's name and the file its labels came from (npy: the labels file; csv: the CSV).
std::string source(const TrainConfig& cfg, const data::Dataset& train) {
  const std::string& file =
      cfg.data.train_labels.empty() ? cfg.data.train_features : cfg.data.train_labels;
  return file.empty() ? train.name : train.name + " (" + file + ")";
}

void check_loss(const TrainConfig& cfg, const data::Dataset& train) {
  const std::string name = source(cfg, train);
  if (cfg.loss == "cross_entropy" && !train.is_classification()) {
    throw ConfigError("model.loss = \"cross_entropy\" needs integer class labels, but " + name +
                          " has float targets (regression, " + std::to_string(train.target_dim) +
                          " outputs)",
                      "set model.loss = \"mse\" (or \"auto\"), or save the labels as integers "
                      "(np.save(path, y.astype(np.int64))) for classification");
  }
  if (cfg.loss == "mse" && train.is_classification()) {
    throw ConfigError("model.loss = \"mse\" needs float targets, but " + name +
                          " has integer class labels (classification)",
                      "set model.loss = \"cross_entropy\" (or \"auto\"), or save the targets as "
                      "float32 (np.save(path, y.astype(np.float32))) for regression");
  }
}

void check_target(const TrainConfig& cfg, const data::Dataset& train) {
  const Target& t = cfg.target;
  if (t.for_classification_only() && !train.is_classification()) {
    throw ConfigError(
        "train.target '" + t.text() + "' watches accuracy, but " + source(cfg, train) +
            " is a regression dataset (float targets)",
        "use val_mse<=X, val_r2>=X or val_loss<=X, e.g. --set train.target=val_r2>=0.9");
  }
  if (t.for_regression_only() && train.is_classification()) {
    throw ConfigError(
        "train.target '" + t.text() + "' is a regression metric, but " + source(cfg, train) +
            " has integer class labels (classification)",
        "use val_accuracy>=X or val_loss<=X, e.g. --set train.target=val_accuracy>=0.88");
  }
}

}  // namespace

void check_task(const TrainConfig& cfg, const data::Dataset& train, std::int64_t model_outputs) {
  check_loss(cfg, train);
  check_target(cfg, train);
  if (model_outputs < 0 || train.is_classification()) return;  // classes: checked by the caller
  if (model_outputs != train.target_dim) {
    throw ConfigError(cfg.model_name() + " has " + std::to_string(model_outputs) + " outputs but " +
                          train.name + " has " + std::to_string(train.target_dim) +
                          " regression targets per example",
                      // Float labels of classes read as one regression target (2026-11-29
                      // audit): the other reading of this mismatch, named beside the first.
                      "make the last layer size " + std::to_string(train.target_dim) +
                          "; or, if the labels are class indices stored as floats, save them as "
                          "integers (numpy: y.astype(np.int64))");
  }
}

}  // namespace lbt::trainer
