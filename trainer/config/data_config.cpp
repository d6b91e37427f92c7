// The data section of the training config; see data_config.hpp.
#include "trainer/config/data_config.hpp"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/config/train_keys.hpp"

namespace lbt::trainer {
namespace {

// data.image_shape "C,H,W" as positive sizes.
std::vector<std::int64_t> read_image_shape(Config& c) {
  std::vector<std::int64_t> image_shape;
  const std::string shape = c.get_string(train_key("data.image_shape"));
  std::stringstream ss(shape);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      image_shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      c.fail("data.image_shape", "comma-separated positive sizes such as 1,28,28",
             "'" + shape + "'");
    }
    if (image_shape.back() <= 0) c.fail("data.image_shape", "positive sizes", "'" + shape + "'");
  }
  return image_shape;
}

// A CSV file's column layout: a class label or regression targets, and its header.
void read_csv_layout(Config& c, DataConfig& d) {
  const bool label_set = c.has("data.label_column");
  d.label_column = c.get_string(train_key("data.label_column"));
  d.target_columns = c.get_string_list(train_key("data.target_columns"));
  // One column layout per file: a class label or regression targets, never both.
  if (label_set && !d.target_columns.empty()) {
    c.fail("data.label_column", "unset when data.target_columns is set (regression)",
           "'" + d.label_column + "'",
           "remove data.label_column for regression, or data.target_columns for classification");
  }
  d.csv_header = c.get_string(train_key("data.csv_header"));
  if (d.csv_header != "auto" && d.csv_header != "true" && d.csv_header != "false") {
    c.fail("data.csv_header", "one of: auto, true, false", "'" + d.csv_header + "'");
  }
}

// The features and labels of npy/csv files, and the shape of their examples.
void read_file_data(Config& c, DataConfig& d) {
  d.train_features = c.get_string(train_key("data.train_features"));
  d.test_features = c.get_string(train_key("data.test_features"));
  if (d.format == "npy") {
    d.train_labels = c.get_string(train_key("data.train_labels"));
    d.test_labels = c.get_string(train_key("data.test_labels"));
  } else {
    read_csv_layout(c, d);
  }
  d.num_classes = c.get_int(train_key("data.num_classes"));
  d.image_shape = read_image_shape(c);
  if (d.train_features.empty()) {
    c.fail(
        "data.train_features", "a path to a ." + d.format + " file", "nothing",
        "set data.train_features" + std::string(d.format == "npy" ? " and data.train_labels" : ""));
  }
  if (d.format == "npy" && d.train_labels.empty())
    c.fail("data.train_labels", "a path to a .npy file", "nothing");
  if (d.num_classes < 0) c.fail("data.num_classes", ">= 0", std::to_string(d.num_classes));
}

// data.*: the dataset, its files or synthetic problem, and the split.
}  // namespace

void read_data_config(Config& c, DataConfig& d) {
  d.dataset = c.get_string(train_key("data.dataset"));
  c.get_string(train_key("data.format"));  // recorded as given; data_format_of resolves it
  d.format = data_format_of(c);
  if (d.format == "synthetic") d.format.clear();  // the loader keys on data.dataset
  if (d.format == "idx" || d.format == "cifar10") d.path = c.get_string(train_key("data.path"));
  d.validation_size = c.get_int(train_key("data.validation_size"));
  d.train_limit = c.get_int(train_key("data.train_limit"));
  d.normalize = c.get_bool(train_key("data.normalize"));
  d.augment_crop_padding = c.get_int(train_key("data.augment.crop_padding"));
  d.augment_flip = c.get_bool(train_key("data.augment.flip"));
  if (d.augment_crop_padding < 0)
    c.fail("data.augment.crop_padding", ">= 0", std::to_string(d.augment_crop_padding));
  if (d.format == "npy" || d.format == "csv") read_file_data(c, d);
  if (d.dataset == "synthetic-regression") {
    d.synthetic_examples = c.get_int(train_key("data.synthetic.examples"));
    d.synthetic_dim = c.get_int(train_key("data.synthetic.dim"));
    d.synthetic_noise = c.get_double(train_key("data.synthetic.noise"));
    // Unchecked until 2026-11-29: -5 examples ended in "vector::_M_default_append" (exit 1), a
    // noise of nan trained to "diverged" at step 0.
    if (d.synthetic_examples < 1)
      c.fail("data.synthetic.examples", ">= 1", std::to_string(d.synthetic_examples));
    if (d.synthetic_dim < 1) c.fail("data.synthetic.dim", ">= 1", std::to_string(d.synthetic_dim));
    if (!(std::isfinite(d.synthetic_noise) && d.synthetic_noise >= 0))
      c.fail("data.synthetic.noise", "a finite number >= 0 (the labels' noise sd)",
             std::to_string(d.synthetic_noise));
  } else if (d.format != "idx" && d.format != "cifar10" && d.format != "npy" && d.format != "csv") {
    if (d.format.empty()) {
      c.fail("data.dataset",
             "one of: fashion-mnist, mnist, cifar10, synthetic-regression (or set data.format)",
             "'" + d.dataset + "'");
    }
    c.fail("data.format", "one of: idx, cifar10, npy, csv", "'" + d.format + "'");
  }
  if (d.validation_size < 0)
    c.fail("data.validation_size", ">= 0", std::to_string(d.validation_size));
  if (d.train_limit < 0) c.fail("data.train_limit", ">= 0", std::to_string(d.train_limit));
}

}  // namespace lbt::trainer
